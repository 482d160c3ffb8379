"""The `segue` command (console script and `python -m segue`): `serve` goes to the language server,
everything else to the CLI. Only this module knows both, so `segue.cli` never imports the language-server
package (nor pygls) and `segue.lsp` never imports the CLI.

A `segue list` whose output is known to be current (segue.warm), and a `segue search` a fresh index answers
(segue.cli_search.quick_main), are printed before the CLI and its parser are imported."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def serve(home: str | None) -> int:
    from segue.collector import paused

    # The server's imports (lsprotocol's types above all) build objects that live as long as it does: collecting
    # while they are made only scans them again and again (measured: ~60 ms of a 0.6 s import). Frozen after,
    # so that later collections leave them out too.
    with paused(freeze=True):
        from segue.lsp.server import serve as run_server
    return run_server(home=home)


def _quick(args: list[str]) -> int | None:
    """The exit code of a quick answer, or None (having printed nothing) when the CLI must answer."""
    if "list" in args[:3]:
        from segue.warm import answer as quick
    elif "search" in args[:3]:
        from segue.cli_search import quick_main as quick
    else:
        return None
    from segue.collector import paused

    # A quick answer is short and bounded (a kept listing, patched or not; a query of a fresh index), and it
    # allocates its objects in bursts that the cyclic collector would scan again and again: measured on 8,000
    # sessions, a patched `list --json` spent 20-40 ms in it (14-23 % of its CPU), with the same peak memory
    # without it. The full path that follows a refused quick answer collects as usual (a cold scan holds
    # cycles: +1.2 MB without the collector). SEGUE_QUICK_GC=1 keeps it on.
    with paused(os.environ.get("SEGUE_QUICK_GC", "0") != "1"):
        return quick(args)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        rc = _quick(args)
    except KeyboardInterrupt:
        return 130
    if rc is not None:
        return rc
    from segue.cli import main as cli_main

    return cli_main(args, serve=serve)
