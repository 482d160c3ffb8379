"""Decoding a long JSON line from a copy with the middle of its long strings cut out.

Shared by the Claude Code and Codex readers: a brief needs the ends of a multi-MB tool output (its exit-code
header, its last lines), not the middle, and decoding the whole line is what dominates a brief of a huge
session. Every user of a cut copy falls back to decoding the whole line when the copy could read differently.
"""

from __future__ import annotations

from collections.abc import Iterable

from segue.stores.base import FAST_JSON

CUT_MARK = "\x00segue:cut\x00"  # what a cut string holds in place of its middle
MARK_JSON = b"\\u0000segue:cut\\u0000"
# How many escaped quotes `cut_strings` steps over to find where a string ends before it gives the string
# up (the caller then decodes the line whole). Tool output that is JSON escapes every quote: a Python loop
# over thousands of them costs more than decoding the line when orjson decodes (about 1 GB/s); the stdlib
# decoder is slow enough on such strings that the loop still pays.
CUT_QUOTES = 64 if FAST_JSON else 4096
# A string with more escaped quotes than this in its first 2 KiB is JSON inside a string (tool output):
# `cut_strings` leaves it whole without walking its quotes. With orjson the walk would give up there anyway;
# with the stdlib a walk over thousands of quotes (a Python loop) costs more than decoding them too.
DENSE_QUOTES = CUT_QUOTES if FAST_JSON else 32


def string_end(raw: bytes, j: int, limit: int = 64) -> int:
    """Index of the unescaped quote that ends the JSON string opened at `raw[j]`, or -1 (also after `limit`
    escaped quotes). Loops over quotes with a single-byte `find`: memchr-fast, where CPython's
    multi-byte search is slow on JSON."""
    k = j + 1
    for _ in range(limit):  # text full of escaped quotes: a plain decode is cheaper than this loop
        k = raw.find(b'"', k)
        if k < 0:
            return -1
        n = 0
        while raw[k - 1 - n] == 0x5C:  # backslashes before the quote
            n += 1
        if n % 2 == 0:
            return k
        k += 1
    return -1



def cut_point(raw: bytes, p: int, hi: int) -> int:
    """The first index from `p` (below `hi`, at most 256 bytes on) where a JSON string can be cut: not
    inside an escape sequence (no backslash in the 6 bytes before) nor inside a UTF-8 character; else -1."""
    end = min(p + 256, hi)
    while p < end:
        b = raw.rfind(b"\\", p - 6, p)
        if b >= 0:
            p = b + 7
        elif 0x80 <= raw[p] < 0xC0:
            p += 1
        else:
            return p
    return -1



def cut_strings(raw: bytes, spans: Iterable[tuple[int, int, int]], cut: list[int] | None = None
                ) -> bytes | None:
    """A copy of the JSON line `raw` with the middle of long strings replaced by `CUT_MARK`. Each span is
    (index of the string's opening quote, bytes to keep at its start, bytes to keep at its end); spans
    ascend and never start inside another string. The starts of the strings cut are appended to `cut`.
    None when no string was long enough to be worth it."""
    pieces: list[bytes] = []
    prev = 0
    for j, head, tail in spans:
        if j < prev:
            continue
        if raw.count(b'\\"', j, j + 2048) > DENSE_QUOTES:
            continue  # escaped JSON: walking its quotes one by one costs more than decoding it
        k = string_end(raw, j, CUT_QUOTES)
        if k < 0 or k - j < head + tail + 1024:
            continue
        a = j + 1 if head == 0 else cut_point(raw, j + 1 + head, k)
        b = k if tail == 0 else cut_point(raw, k - tail, k)
        if a < 0 or b < 0:
            continue
        pieces += (raw[prev:a], MARK_JSON)
        prev = b
        if cut is not None:
            cut.append(j)
    if not pieces:
        return None
    pieces.append(raw[prev:])
    return b"".join(pieces)
