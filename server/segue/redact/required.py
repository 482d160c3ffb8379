"""Characters every match of a regex must hold, read from sre's parse of it (index.py leaves a rule out of a
window that lacks one). Only characters that no case folding touches (ASCII punctuation and digits) count, so
the answer holds with (?i) too; anything this reading does not know (a class with ranges, a back-reference, a
negative look-around) requires nothing. A look-around's characters count: they lie in the scanned text as well.
tests/test_redact_fastpaths.py checks every rule's answer against its matches."""

from __future__ import annotations

from typing import Any

UNCASED = frozenset(chr(i) for i in range(33, 127) if not chr(i).isalpha())
_MAX_SET = 12  # a set of more characters than this is present in nearly every text: not worth a test


def required(pattern: str, flags: int = 0) -> tuple[str, ...]:
    """Strings of characters: every match of ``pattern`` holds at least one character of each (as few and
    as small as found); () when nothing can be read."""
    try:
        from re import _constants as C  # type: ignore[attr-defined]
        from re import _parser  # type: ignore[attr-defined]

        tree = _parser.parse(pattern, flags)
    except Exception:  # another Python's re module, or a pattern sre would not take
        return ()
    sets = {s for s in _seq(tree, C) if s}
    return tuple("".join(sorted(s)) for s in sorted(sets, key=lambda s: (len(s), sorted(s))))


def _seq(items: Any, C: Any) -> list[frozenset[str]]:
    out: list[frozenset[str]] = []
    for op, av in items:
        out += _one(op, av, C)
    return out


def _one(op: Any, av: Any, C: Any) -> list[frozenset[str]]:
    if op is C.LITERAL:
        c = chr(av)
        return [frozenset(c)] if c in UNCASED else []
    if op is C.IN:  # a class of plain characters only (no range, category or negation)
        chars = set()
        for o, a in av:
            if o is not C.LITERAL or chr(a) not in UNCASED:
                return []
            chars.add(chr(a))
        return [frozenset(chars)] if chars and len(chars) <= _MAX_SET else []
    if op is C.SUBPATTERN:
        return _seq(av[3], C)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", None)):
        lo, _, body = av
        return _seq(body, C) if lo >= 1 else []
    if op is getattr(C, "ATOMIC_GROUP", None):
        return _seq(av, C)
    if op is C.ASSERT:  # a look-ahead or look-behind: its characters are in the text scanned
        return _seq(av[1], C)
    if op is C.BRANCH:  # one of the alternatives matches: the union of a requirement of each
        union: set[str] = set()
        for alt in av[1]:
            sets = _seq(alt, C)
            if not sets:
                return []
            union |= min(sets, key=len)
        return [frozenset(union)] if len(union) <= _MAX_SET else []
    return []  # ANY, NOT_LITERAL, CATEGORY, AT, GROUPREF, GROUPREF_EXISTS, ASSERT_NOT …
