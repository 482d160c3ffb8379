#!/usr/bin/env bash
# Install the real runtime CLIs (pinned) into .runtimes/<runtime>/ so tests can run them offline.
# Usage: tests/realruntimes/install.sh [claude] [codex] [opencode] [cline] [gemini] [gemini-legacy]   (default: all)
# Each runtime has its own prefix, so installs can run side by side.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
declare -A PKG=(
  [claude]="@anthropic-ai/claude-code@2.1.337"
  [codex]="@openai/codex@0.171.0"
  [opencode]="opencode-ai@1.18.33"
  [cline]="cline@3.0.65"
  [gemini]="@google/gemini-cli@0.61.0"
  [gemini-legacy]="@google/gemini-cli@0.24.0"  # the single-JSON-document generation (G1), for its fixture
)
wanted=("$@")
[ ${#wanted[@]} -gt 0 ] || wanted=(claude codex opencode cline gemini gemini-legacy)
for rt in "${wanted[@]}"; do
  spec=${PKG[$rt]:?unknown runtime $rt}
  prefix="$repo/.runtimes/$rt"
  if [ -f "$prefix/.installed" ] && [ "$(cat "$prefix/.installed")" = "$spec" ]; then
    echo "$rt: $spec already installed"; continue
  fi
  mkdir -p "$prefix"
  # native binaries come as optional platform dependencies: never --omit=optional
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$spec"
  echo "$spec" > "$prefix/.installed"
  echo "$rt: installed $spec"
done
