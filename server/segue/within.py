"""Whether a session's directory lies within another (`--dir`), apart from segue.listing so a CLI query's --dir
imports neither the listing nor the readers."""

from __future__ import annotations

import contextlib
import os

from segue import probe

TYPE_CHECKING = False  # not typing's: a CLI quick answer imports this module
if TYPE_CHECKING:
    from collections.abc import Callable


def cwd_within(cwd: str | None, directory: str) -> bool:
    return bool(cwd) and within(directory)(cwd)


def within(directory: str) -> Callable[[str | None], bool]:
    """`cwd_within(·, directory)` with the directory resolved once (a search asks it of every distinct cwd)."""
    base = os.path.normpath(os.path.abspath(os.path.expanduser(directory)))
    bases = {base}
    with contextlib.suppress(OSError), probe.observe():  # symlinks decide it: a warm replay re-resolves them
        bases.add(os.path.realpath(base))
    prefixes = [(b, b.rstrip(os.sep) + os.sep) for b in bases]

    def test(cwd: str | None) -> bool:
        if not cwd:
            return False
        forms = {os.path.normpath(cwd)}
        with contextlib.suppress(OSError), probe.observe():
            forms.add(os.path.realpath(cwd))
        return any(c == b or c.startswith(p) for c in forms for b, p in prefixes)

    return test
