"""Benchmarks, one module each, run from the repository root as `python -m bench.NAME`.

`--json [PATH]` also writes a bench's figures to PATH, or to bench/results/NAME.json;
bench/parts/ holds what the benches share. bench/README.md lists them.
"""
