#!/usr/bin/env bash
# Install OpenAI's Codex CLI, pinned, into .tools/codex of the repository (npm, Node >= 18):
# the coding agent the tests run unmodified through the proxy (tests/helpers/codex.py).
set -euo pipefail
cd "$(dirname "$0")/.."
version="${CODEX_VERSION:-0.171.0}"
prefix=.tools/codex

command -v npm >/dev/null || { echo "npm is missing: install Node.js 18 or later" >&2; exit 1; }
npm install --prefix "$prefix" --no-audit --no-fund --no-save "@openai/codex@$version" >/dev/null
"$prefix/node_modules/.bin/codex" --version
