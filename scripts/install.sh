#!/usr/bin/env bash
# Make .venv in the repository and install agent-eval into it, with the extras named
# (comma-separated; default: local), building llama.cpp portably: see docs/install.md.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-local}"

# A build tuned to this CPU dies where a sandbox reports AMX without enabling it (gVisor);
# the multimodal library and llama.cpp's common/ are never loaded, so they are not built.
# CMAKE_ARGS, when set, replaces these flags.
portable="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF"
trimmed="-DCMAKE_PROJECT_llama.cpp_INCLUDE=$PWD/scripts/llama-cpp-no-common.cmake"
export CMAKE_ARGS="${CMAKE_ARGS:-$portable $trimmed}"

python3 -m venv .venv
.venv/bin/pip install -e ".[$extras]"
# BFCL's package without its dependencies (pyproject.toml's `bfcl` extra says why).
case ",$extras," in
    *,bfcl,* | *,test,*) .venv/bin/pip install --no-deps "bfcl-eval==2026.3.23" ;;
esac
