"""Regexes compiled on first use. The rule table holds ~150 patterns and a process that redacts one title
uses a handful of them: compiling them all costs ~20 ms at import, paid by every listing with a changed
session (issue 16). A ``LazyPattern`` reads like a compiled pattern; the first method call compiles it and
puts the compiled pattern's bound methods on the instance, so later calls cost what a real pattern's do."""

from __future__ import annotations

import re
from typing import Any

from segue import recache

_INLINE_FLAGS_RE = recache.compile(r"\(\?([aiLmsux]+)\)")
_FLAG_LETTERS = {"a": re.A, "i": re.I, "L": re.L, "m": re.M, "s": re.S, "u": re.U, "x": re.X}
_METHODS = ("match", "search", "fullmatch", "finditer", "findall", "sub", "subn", "split", "scanner")


class _FromCompiled:
    """An attribute of the compiled pattern, kept on the instance once read: a descriptor without __set__, so the
    instance's own attribute wins from then on (a property would cost two calls on every read)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        if obj is None:
            return self
        value = getattr(obj.compiled, self.name)
        obj.__dict__[self.name] = value
        return value


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
            p = recache.compile(self.pattern, self._given)  # (re.compile unless a patched listing kept them)
            self.__dict__["_compiled"] = p
            for name in _METHODS:  # instance attributes win over the methods below: later calls go straight to sre
                self.__dict__[name] = getattr(p, name)
        return p

    # the first call of each compiles (no __getattr__: it would slow every attribute lookup down)
    def match(self, *args: Any) -> Any:
        return self.compiled.match(*args)

    def search(self, *args: Any) -> Any:
        return self.compiled.search(*args)

    def fullmatch(self, *args: Any) -> Any:
        return self.compiled.fullmatch(*args)

    def finditer(self, *args: Any) -> Any:
        return self.compiled.finditer(*args)

    def findall(self, *args: Any) -> Any:
        return self.compiled.findall(*args)

    def sub(self, *args: Any) -> Any:
        return self.compiled.sub(*args)

    def subn(self, *args: Any) -> Any:
        return self.compiled.subn(*args)

    def split(self, *args: Any) -> Any:
        return self.compiled.split(*args)

    def scanner(self, *args: Any) -> Any:
        return self.compiled.scanner(*args)

    groupindex: Any = _FromCompiled("groupindex")
    groups: Any = _FromCompiled("groups")

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r}, {self._given})"


def compiled(p: re.Pattern[str] | LazyPattern) -> re.Pattern[str]:
    """The compiled pattern behind ``p`` (itself if it is one)."""
    return p.compiled if isinstance(p, LazyPattern) else p
