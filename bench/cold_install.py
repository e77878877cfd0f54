"""Time README's install on a cold machine: fresh clone, fresh venv, empty pip cache.

Takes the install part of README's first command (everything before `&& agent-eval run`),
runs it in a fresh clone of this repository's HEAD with a new, empty pip cache, and prints
its wall time; `--baseline` also times it without leaving out llama.cpp's common/ library
(scripts/install.sh's flags without its CMAKE_PROJECT_llama.cpp_INCLUDE), side by side, as a
ratio.
Run from the repository root:
`python -m bench.cold_install [--baseline] [--keep DIR] [--json [PATH]]`.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

from bench.parts import ROOT
from bench.parts.results_file import add_json_option, machine, write_results

# scripts/install.sh takes CMAKE_ARGS from the environment when set: its portable flags alone.
UNTRIMMED = {"CMAKE_ARGS": "-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"}


def readme_install() -> str:
    """README's first command, up to the run it ends with."""
    block = re.search(r"```bash\n(.+?)\n```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert block is not None, "README.md has no bash block"
    install, _, _ = block.group(1).partition(" && agent-eval run")
    return install


def timed_install(command: str, folder: Path, extra_env: dict[str, str] | None = None) -> float:
    """Seconds the command takes in a fresh clone with an empty pip cache."""
    clone = folder / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    # A new, empty pip cache; and not this shell's venv.
    unset = ("VIRTUAL_ENV", "PYTHONPATH", "CMAKE_ARGS")
    env = {k: v for k, v in os.environ.items() if k not in unset} | (extra_env or {})
    env["PIP_CACHE_DIR"] = str(folder / "pip-cache")
    started = time.monotonic()
    subprocess.run(
        ["bash", "-c", command], cwd=clone, check=True, env=env, stdout=subprocess.DEVNULL
    )
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", action="store_true", help="Also time the full build.")
    parser.add_argument("--keep", type=Path, help="Install here and keep it (default: a temp dir).")
    add_json_option(parser, "cold_install")
    args = parser.parse_args()
    about = machine()
    command = readme_install()
    print(f"+ {command}")
    figures: dict[str, object] = {"command": command}
    with tempfile.TemporaryDirectory() as temporary:
        base = args.keep or Path(temporary)
        seconds = timed_install(command, base / "trimmed")
        figures["install_s"] = seconds
        print(f"{time.strftime('%Y-%m-%d')}: cold install {seconds:.0f} s ({seconds / 60:.1f} min)")
        if args.baseline:
            full = timed_install(command, base / "full", UNTRIMMED)
            figures |= {"with_common_s": full, "ratio": seconds / full}
            print(f"with common/ built: {full:.0f} s; README's install takes {seconds / full:.2f}x")
    write_results(args, figures, about)


if __name__ == "__main__":
    main()
