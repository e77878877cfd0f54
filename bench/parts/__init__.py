"""What the benchmarks share: processes, load, tables, results files."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository: benches run with it on sys.path
