"""A bench's results file: the `--json [PATH]` option and the JSON it writes, which holds the
figures with what made them (the command, the commit, the settings, the machine, the date)."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from bench.parts import ROOT

RESULTS = ROOT / "bench" / "results"
PACKAGES = ("aiohttp", "uvloop", "sglang-router")  # the proxy benches' figures depend on them
NOT_SETTINGS = ("bench", "json", "keep")  # where the output goes, not what is measured


def add_json_option(parser: argparse.ArgumentParser, bench: str) -> None:
    """`--json [PATH]` on the bench's parser; `bench` (its module name) names the default file."""
    parser.set_defaults(bench=bench)
    parser.add_argument(
        "--json",
        nargs="?",
        type=Path,
        const=RESULTS / f"{bench}.json",
        metavar="PATH",
        help=f"also write the figures as JSON: to PATH, else to bench/results/{bench}.json",
    )


def machine() -> dict[str, Any]:
    """The machine the figures come from; read as the bench starts, so its load is the load
    the bench met, not the load it made."""
    return {
        "cores": os.cpu_count(),
        "cpu": _cpu_model(),
        "os": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        **{name: _version(name) for name in PACKAGES},
        "load avg at start": round(os.getloadavg()[0], 2),
    }


def describe(about: Mapping[str, Any]) -> str:
    """The machine on one line, under a bench's tables."""
    return "machine: " + " · ".join(f"{key} {value}" for key, value in about.items())


def write_results(
    args: argparse.Namespace, figures: Mapping[str, Any], about: Mapping[str, Any]
) -> None:
    """Write the figures where `--json` says, if it was given, and say where."""
    if args.json is None:
        return
    stored = {
        "bench": args.bench,
        "command": " ".join(
            ["python", "-m", f"bench.{args.bench}", *map(shlex.quote, sys.argv[1:])]
        ),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _commit(),
        "machine": dict(about),
        "settings": {k: _portable(v) for k, v in vars(args).items() if k not in NOT_SETTINGS},
        "figures": figures,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    # Paths as text; NaN kept as Python's json writes it (a figure that could not be taken).
    args.json.write_text(json.dumps(stored, indent=2, default=str) + "\n")
    print(f"figures written to {args.json}", flush=True)


def _portable(value: object) -> object:
    """A path beside or inside the repository relative to it, so a stored result names no
    machine's folders (`../shared/...`); any other value as it is."""
    if isinstance(value, str | Path) and Path(value).is_absolute():
        relative = os.path.relpath(value, ROOT)
        if not relative.startswith(f"..{os.sep}..{os.sep}"):
            return relative
    return value


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _commit() -> str | None:
    """The commit the bench ran from, marked `-dirty` with uncommitted changes; None off git."""
    try:
        done = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()
