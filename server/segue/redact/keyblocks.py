"""Private-key blocks: BEGIN paired with END in linear time, and windows stretched over a block."""

from __future__ import annotations

import bisect

from segue import recache
from segue.redact.common import _OVERLAP

# private keys, and OpenVPN's static (shared secret) keys, which are armoured the same way
_KEY_KIND = r"(?:PRIVATE KEY(?: BLOCK)?|OpenVPN Static key V1)"
_OPEN_KEY = r"-----BEGIN[ A-Z0-9_-]{0,100}" + _KEY_KIND + "-----"

_BEGIN_KEY_RE = recache.compile(_OPEN_KEY)
_END_KEY_RE = recache.compile(r"-----END[ A-Z0-9_-]{0,100}" + _KEY_KIND + "-----")
_KEY_SEARCH = 65536
# lines of a key block: base64 (16+ chars, the last line and PGP's "=crc" may be shorter), armour
# headers ("Proc-Type: ..."), blank lines; line breaks raw or JSON-escaped
_FIRST_LINE_RE = recache.compile(r"(?:\\r|\\n|[\r\n \t]){0,8}(?:(?!\\n|\\r)[^\r\n]){0,4096}")
_KEY_BODY_RE = recache.compile(
    r"(?:(?:\\r|\\n|[\r\n \t])+(?:[A-Za-z0-9+/]{16,200}={0,2}|[A-Za-z0-9+/]{1,15}={0,2}(?=\\n|\\r|[\r\n]|$)"
    r"|[A-Za-z][\w-]{0,40}: [^\n\\]{0,200}))*"
)


# key material between BEGIN and END: a run of base64 (every armoured key has lines of 64)
_MATERIAL_RE = recache.compile(r"[A-Za-z0-9+/]{16}")
_STUB_RE = recache.compile(r"(?:\\[rn]|\s)*(?:\.{3}|…|[*x•#]{3,}|<[^<>\n]{0,80}>|\[[^\]\n]{0,80}\])?(?:\\[rn]|\s)*")
_PROSE_RE = recache.compile(r"[A-Za-z]{2,}[ \t]+[A-Za-z]{2,}")  # words with a space between: never in a key body


def _extend_over_key_blocks(text: str, lo: int, hi: int) -> int:
    """Move ``hi`` past the END line of any private-key block that begins before it."""
    while True:
        last = None
        for m in _BEGIN_KEY_RE.finditer(text, max(lo, 0), hi):
            last = m
        if last is None:
            return hi
        end = _END_KEY_RE.search(text, last.end(), min(len(text), last.end() + _KEY_SEARCH))
        new_hi = min(len(text), (end.end() if end else last.end() + _KEY_SEARCH) + _OVERLAP)
        if new_hi <= hi:
            return hi
        hi = new_hi


def _extend_back_over_key_block(text: str, lo: int, hi: int) -> int:
    """Move ``lo`` back to the BEGIN line of a private-key block the window starts inside."""
    end = _END_KEY_RE.search(text, lo, hi)
    if end is None:
        return lo
    begin = _BEGIN_KEY_RE.search(text, lo, end.start())
    if begin is not None:
        return lo
    back = max(0, lo - _KEY_SEARCH)
    # only BEGIN lines before lo: one after it opens another block (moving lo forward dropped text)
    starts = [m.start() for m in _BEGIN_KEY_RE.finditer(text, back, lo + 200) if m.start() <= lo]
    return starts[-1] if starts else lo


def _orphan_key_tail(window: str) -> list[tuple[int, int, str]]:
    """A window that starts inside a key block whose BEGIN was not found: redact up to its END."""
    end = _END_KEY_RE.search(window)
    if end is None or _BEGIN_KEY_RE.search(window, 0, end.start()):
        return []
    return [(0, end.end(), "private-key")]


def _key_blocks(text: str) -> list[tuple[int, int, str]]:
    """Every private-key block, each BEGIN paired with the first END after it (linear time: a lazy
    regex would rescan up to the search limit from every BEGIN)."""
    ends = list(_END_KEY_RE.finditer(text))
    starts = [e.start() for e in ends]
    out: list[tuple[int, int, str]] = []
    covered = 0
    for b in _BEGIN_KEY_RE.finditer(text):
        if b.start() < covered:
            continue
        i = bisect.bisect_left(starts, b.end())
        if i < len(ends) and ends[i].start() - b.end() <= _KEY_SEARCH:
            if not _MATERIAL_RE.search(text, b.end(), ends[i].start()) and (
                    _PROSE_RE.search(text, b.end(), ends[i].start())
                    or _STUB_RE.fullmatch(text, b.end(), ends[i].start())):
                # "starts with -----BEGIN … KEY----- and ends with -----END … KEY-----": prose, no key; a body that
                # is only a stand-in ("\n...\n", <your key>, ***) holds none either
                continue
            span = (b.start(), ends[i].end(), "private-key")
        else:  # END cut off: take every following line that looks like key material
            body = _KEY_BODY_RE.match(text, b.end())
            first = _FIRST_LINE_RE.match(text, b.end())  # at least the line after BEGIN, whatever it holds
            span = (b.start(), max(body.end() if body else b.end(), first.end() if first else b.end()),
                    "private-key-open")
        out.append(span)
        covered = span[1]
    return out

