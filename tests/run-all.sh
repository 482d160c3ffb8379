#!/usr/bin/env bash
# Set up everything the tests need on a fresh machine (idempotent), then run every test suite:
# ruff, the Python tests (including real runtimes offline and the language server over stdio), and the
# VS Code extension in a real VS Code (code-server) in headless Chromium.
# Environment: SEGUE_SKIP_SETUP=1 skips the install steps (for quick local reruns).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

if [ "${SEGUE_SKIP_SETUP:-0}" != 1 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    # tmux: real runtimes under a pseudo-terminal; git: scenario repos; iproute2/util-linux: loopback-only netns
    apt-get install -y -qq --no-install-recommends tmux git iproute2 util-linux sqlite3 python3-venv >/dev/null
  fi
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[test]"
  tests/realruntimes/install.sh
  vscode-extension/scripts/setup.sh
fi

echo "== ruff"
.venv/bin/ruff check .
echo "== python tests"
.venv/bin/python -m pytest -q -ra
echo "== extension tests"
vscode-extension/scripts/test-all.sh
