"""Regenerate real-runtime fixtures: ``python -m tests.realruntimes.generate <runtime>...``.

Each runtime's ``tests/realruntimes/gen_<runtime>.py`` exposes ``generate(out_dir)``; out_dir is that
runtime's fixture dir (``tests/fixtures/real/<runtime>``). Pairs whose ``continued`` sessions name each
other (Claude+Codex, OpenCode+Cline) are generated together by whichever module is asked first. Needs the
runtimes installed (``tests/realruntimes/install.sh``), root for ``unshare -n``, and tmux for TUIs.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from tests.realruntimes.harness import FIXTURES, runtime_bin

RUNTIMES = ("claude", "codex", "opencode", "cline", "gemini")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.realruntimes.generate", description=__doc__)
    ap.add_argument("runtimes", nargs="*", metavar="runtime", help=f"{', '.join(RUNTIMES)} (default: all)")
    args = ap.parse_args(argv)
    wanted = list(dict.fromkeys(args.runtimes or RUNTIMES))
    unknown = [rt for rt in wanted if rt not in RUNTIMES]
    if unknown:
        ap.error(f"unknown runtime: {' '.join(unknown)}")
    missing = [rt for rt in wanted if runtime_bin(rt) is None]
    if missing:
        print(f"not installed: {' '.join(missing)} (run tests/realruntimes/install.sh {' '.join(missing)})",
              file=sys.stderr)
        return 2
    for rt in wanted:
        module = importlib.import_module(f"tests.realruntimes.gen_{rt}")
        module.generate(FIXTURES / rt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
