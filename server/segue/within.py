"""Whether a session's directory lies within another (`--dir`), apart from segue.listing so a CLI query's --dir
imports neither the listing nor the readers."""

from __future__ import annotations

import contextlib
import os

from segue import probe


def cwd_within(cwd: str | None, directory: str) -> bool:
    if not cwd:
        return False
    base = os.path.normpath(os.path.abspath(os.path.expanduser(directory)))
    forms = {os.path.normpath(cwd)}
    with contextlib.suppress(OSError), probe.observe():  # symlinks decide it: a warm replay re-resolves them
        forms.add(os.path.realpath(cwd))
    bases = {base}
    with contextlib.suppress(OSError), probe.observe():
        bases.add(os.path.realpath(base))
    for c in forms:
        for b in bases:
            if c == b or c.startswith(b.rstrip(os.sep) + os.sep):
                return True
    return False
