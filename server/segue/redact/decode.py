"""Views of a text that show a secret the rules cannot see as written (issue 12): percent-encoded values
(``password%3DTr0ub%26dor``, ``%7B%22token%22%3A…``), JSON escaped inside a string (``\\"token\\":\\"…\\"``)
and values split across a quoted concatenation (``"ghp_abc" + "def…"``, implicit ``'a' 'b'``).

Each view is a region of the text (around where the encoding occurs, bounded) rewritten, with, for each
character of the rewrite, the span of the original it came from: the rules run on the rewrite and their
spans are mapped back, widened over the encoded characters. A view is built only where its trigger (a
literal-first regex) matches, so text without them costs one search each.
"""

from __future__ import annotations

import re

from segue import recache

# %XX that encode URL punctuation, upper-case hex as encoders write it ("%2d" in printf formats is not one)
_PCT = r"%(?:2[0-9A-F]|3[A-F]|40|5[BCDEF]|60|7[BCDE])"
_PCT_RE = recache.compile(_PCT)
_PCT_TRIGGER = recache.compile(_PCT + r"[^%\s]{0,400}" + _PCT)  # two of them: a value or a URL, not a stray %3A
# a JSON key escaped inside a string: \"token\":
_ESC_TRIGGER = recache.compile(r"\\\"[A-Za-z_][\w.-]{0,60}\\\"[ \t]{0,4}:")
_ESC_RE = recache.compile(r"\\([\"'\\/])")
# a file's lines escaped inside a string (a tool's result: "[deploy]\ntoken = …\n"): an escaped line break before
# a key that names a secret, where the key's start is glued to the "n" of the escape
_NL_TRIGGER = recache.compile(r"\\n[ \t]{0,8}[\w.-]{0,40}(?i:token|secret|passw|pwd|key|auth)[\w.-]{0,30}"
                              r"[ \t]{0,4}[=:]")
_NL_RE = recache.compile(r"(?:\\r)?\\n")
# the glue between two quoted pieces of one value: closing quote, an operator or none, maybe a line break,
# the same opening quote; 8+ token characters on both sides (shorter pieces are words and format strings)
_TOKEN = r"A-Za-z0-9+/=_.~-"
# one pattern per quote character: a literal first lets sre skip to it (a [\"'] group first costs 3x more)
_GLUE_RES = tuple(recache.compile(q + r"(?<=[" + _TOKEN + r"]{8}" + q + r")[ \t]{0,8}(?:\+|\.\.?|&|\|\|)?[ \t]{0,8}"
                             r"(?:\\?\r?\n[ \t]{0,40})?" + q + r"(?=[" + _TOKEN + r"]{8})") for q in "\"'")
_REACH = 400  # characters of context around a trigger that the rewrite covers
_MAX_REGIONS = 64

View = tuple[int, str, list[int], list[int]]  # (offset, rewrite, start in region, end in region)


def _regions(text: str, spots: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Bounded regions around the spots, merged, extended to whole lines where that is cheap."""
    out: list[tuple[int, int]] = []
    for a, b in spots[:_MAX_REGIONS]:
        lo = text.rfind("\n", max(0, a - _REACH), a) + 1 or max(0, a - _REACH)
        if lo > 1 and text[lo:a].lstrip(" \t")[:1] in ("'", '"'):  # a continuation line: its key is above
            lo = text.rfind("\n", max(0, lo - 1 - _REACH), lo - 1) + 1 or max(0, lo - 1 - _REACH)
        hi = text.find("\n", b, b + _REACH)
        hi = hi if hi >= 0 else min(len(text), b + _REACH)
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _rewrite(region: str, pattern: re.Pattern[str], repl: str | None) -> tuple[str, list[int], list[int]]:
    """``region`` with each match replaced (group 1 if ``repl`` is None, else ``repl``), and per character
    of the result the span of ``region`` it stands for."""
    parts: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    pos = 0
    for m in pattern.finditer(region):
        a, b = m.span()
        parts.append(region[pos:a])
        starts.extend(range(pos, a))
        ends.extend(range(pos + 1, a + 1))
        new = _decoded(m) if repl is None else repl
        if new:
            parts.append(new)
            starts.extend([a] * len(new))
            ends.extend([b] * len(new))
        elif starts:  # removed glue: the character before it now stands for the glue too
            ends[-1] = b
        pos = b
    parts.append(region[pos:])
    starts.extend(range(pos, len(region)))
    ends.extend(range(pos + 1, len(region) + 1))
    return "".join(parts), starts, ends


def _decoded(m: re.Match[str]) -> str:
    s = m.group(0)
    if s.startswith("%"):
        return chr(int(s[1:], 16))
    return m.group(1)


def views(text: str) -> list[View]:
    """The rewritten regions of ``text`` worth scanning again (most texts: none, after at most three
    searches that skip to a literal)."""
    out: list[View] = []
    for trigger, pattern, repl, char in _VIEWS:
        if char not in text:
            continue
        m = trigger.search(text)
        if m is None:
            continue
        spots = [m.span(), *(x.span() for x in trigger.finditer(text, m.end()))]
        for lo, hi in _regions(text, spots):
            new, starts, ends = _rewrite(text[lo:hi], pattern, repl)
            out.append((lo, new, starts, ends))
    return out


_VIEWS = ((_PCT_TRIGGER, _PCT_RE, None, "%"), (_ESC_TRIGGER, _ESC_RE, None, "\\"), (_NL_TRIGGER, _NL_RE, "\n", "\\"),
          *((glue, glue, "", q) for glue, q in zip(_GLUE_RES, "\"'", strict=True)))


def mapped(spans: list[tuple[int, int, str]], view: View) -> list[tuple[int, int, str]]:
    """Spans found in a view, as spans of the original text."""
    lo, new, starts, ends = view
    out = []
    for a, b, rid in spans:
        if a < b <= len(new):
            out.append((lo + starts[a], lo + ends[b - 1], rid))
    return out
