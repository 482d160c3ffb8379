#!/bin/sh
# Bundle the Segue server and its pure-Python deps into bundled/libs (packed into the vsix, gitignored).
# The user's interpreter then runs it with PYTHONPATH=bundled/libs when Segue is not installed there.
set -eu
EXT="$(cd "$(dirname "$0")/.." && pwd)"
ROOT="$(cd "$EXT/.." && pwd)"
PY="${PYTHON:-python3}"
LIBS="$EXT/bundled/libs"

# Build from a copy so pip's in-tree build leaves no build/ or egg-info in the shared checkout.
SRC="$(mktemp -d)"
trap 'rm -rf "$SRC"' EXIT
cp "$ROOT/pyproject.toml" "$SRC/"
for f in README.md LICENSE; do [ -f "$ROOT/$f" ] && cp "$ROOT/$f" "$SRC/"; done
mkdir -p "$SRC/server"
(cd "$ROOT/server" && tar cf - --exclude=__pycache__ --exclude='*.egg-info' .) | (cd "$SRC/server" && tar xf -)
[ -f "$SRC/README.md" ] || echo "Segue" > "$SRC/README.md"

rm -rf "$LIBS"
mkdir -p "$LIBS"
"$PY" -m pip install --quiet --disable-pip-version-check --no-compile --no-deps -t "$LIBS" "$SRC"
"$PY" -m pip install --quiet --disable-pip-version-check --no-compile --no-deps --only-binary=:all: \
  --require-hashes -t "$LIBS" -r "$EXT/bundle-requirements.txt"
rm -rf "$LIBS/bin"
find "$LIBS" -name __pycache__ -type d -prune -exec rm -rf {} +
# Proof that the bundle alone is enough: no site-packages (-S), only bundled/libs.
PYTHONPATH="$LIBS" "$PY" -S -c 'import segue.lsp.server, pygls; print("bundled segue", segue.__version__, "pygls", pygls.__name__)'
