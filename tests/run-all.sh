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

logs=$(mktemp -d)
status=0
echo "== ruff"
.venv/bin/ruff check . || status=1
echo "== python tests"
# in an `if`: a failed pipeline must not end the script (set -e) before the extension tests and the summary
if ! .venv/bin/python -m pytest -q -ra 2>&1 | tee "$logs/pytest.log"; then status=1; fi
echo "== extension tests"
if ! vscode-extension/scripts/test-all.sh 2>&1 | tee "$logs/extension.log"; then status=1; fi

# One closing line for everything that ran.
count() { grep -Eo "[0-9]+ $1" "$2" | tail -1 | grep -Eo '[0-9]+' || echo 0; }
py_pass=$(count passed "$logs/pytest.log"); py_fail=$(count failed "$logs/pytest.log")
py_err=$(count errors? "$logs/pytest.log")
ext=$(grep -E '^[a-z0-9-]+: [0-9]+ passed, [0-9]+ failed' "$logs/extension.log" | sed -E 's/^[a-z0-9-]+: ([0-9]+) passed, ([0-9]+) failed.*/\1 \2/')
ext_pass=0; ext_fail=0
while read -r p f; do [ -n "$p" ] && ext_pass=$((ext_pass + p)) && ext_fail=$((ext_fail + f)); done <<< "$ext"
failed=$((py_fail + py_err + ext_fail))
[ "$status" = 0 ] || [ "$failed" -gt 0 ] || failed=1
echo "all: $((py_pass + ext_pass)) passed, $failed failed"
exit "$status"
