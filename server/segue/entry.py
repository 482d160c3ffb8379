"""The `segue` command (console script and `python -m segue`): `serve` goes to the language server,
everything else to the CLI. Only this module knows both, so `segue.cli` never imports the language-server
package (nor pygls) and `segue.lsp` never imports the CLI."""

from __future__ import annotations

from collections.abc import Sequence


def serve(home: str | None) -> int:
    from segue.lsp.server import serve as run_server

    return run_server(home=home)


def main(argv: Sequence[str] | None = None) -> int:
    from segue.cli import main as cli_main

    return cli_main(argv, serve=serve)
