"""Regexes compiled on first use. The rule table holds ~150 patterns and a process that redacts one title
uses a handful of them: compiling them all costs ~20 ms at import, paid by every listing with a changed
session (issue 16). A ``LazyPattern`` reads like a compiled pattern; the first method call compiles it and
puts the compiled pattern's bound methods on the instance, so later calls cost what a real pattern's do."""

from __future__ import annotations

import re
from typing import Any

_INLINE_FLAGS_RE = re.compile(r"\(\?([aiLmsux]+)\)")
_FLAG_LETTERS = {"a": re.A, "i": re.I, "L": re.L, "m": re.M, "s": re.S, "u": re.U, "x": re.X}
_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner")


class LazyPattern:
    """``re.compile(pattern, flags)``, compiled when first used (``pattern`` and ``flags`` need no compile)."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._given = flags

    @property
    def flags(self) -> int:
        """As ``re.compile(...).flags``: the given flags, the pattern's leading inline flags, UNICODE for str
        patterns unless ASCII or LOCALE (tests/test_redact_lazy.py checks it against compiled patterns)."""
        flags = self._given
        pos = 0
        while m := _INLINE_FLAGS_RE.match(self.pattern, pos):
            for c in m.group(1):
                flags |= _FLAG_LETTERS[c]
            pos = m.end()
        if not flags & (re.A | re.L):
            flags |= re.U
        return flags

    @property
    def compiled(self) -> re.Pattern[str]:
        p = self.__dict__.get("_compiled")
        if p is None:
            p = re.compile(self.pattern, self._given)
            self.__dict__["_compiled"] = p
            for name in _METHODS:
                self.__dict__[name] = getattr(p, name)
            self.__dict__["groupindex"] = p.groupindex
            self.__dict__["groups"] = p.groups
        return p

    def __getattr__(self, name: str) -> Any:  # only for names not yet on the instance: compile, then look up
        if name.startswith("__") or name in ("_compiled", "_given"):
            raise AttributeError(name)
        return getattr(self.compiled, name)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self._given})"


def compiled(p: re.Pattern[str] | LazyPattern) -> re.Pattern[str]:
    """The compiled pattern behind ``p`` (itself if it is one)."""
    return p.compiled if isinstance(p, LazyPattern) else p
