"""What one session contributes to the search index, computed apart from the index (no SQLite): its steps'
hashes, where they first differ from what the index holds, the rows to write from there on and the shown
title, label and directory, all redacted. `SearchIndex.refresh` writes it.

The serial build (`SearchIndex._index_session`) streams the same computation straight into SQLite; this form
exists so that worker processes (segue.search.workers) can do the expensive part, reading and redacting, on
every core while the one writer only writes. Both use `index._hash` and `index._doc`, and a test proves the
index they build is the same row for row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from segue.quote import clean

if TYPE_CHECKING:
    from segue.model import ReadStats, Session, Step

Row = tuple[int, str, str, "int | None"]  # (step index, indexed text, kind, exit code)


@dataclass
class Prepared:
    hashes: bytes  # 8 bytes per step, as stored in `sessions.hashes`
    steps: int  # how many steps the session has now
    diverged: int | None  # the first step that differs from the stored hashes (None: none differs)
    rows: list[Row] = field(default_factory=list)  # rows of the steps from `diverged` on (index-relative)
    kept: int = 0  # steps before `diverged` that matched: not written again
    title: str | None = None
    label: str | None = None
    cwd: str | None = None


def shown_fields(s: Session, redact: Callable[[str, int], str]) -> tuple[str | None, str | None, str | None]:
    """(title, label, cwd) as the index stores them: cleaned and redacted."""
    from segue.search.index import safe_text

    title = redact(safe_text(clean(s.title)), 300) if s.title else None
    label = title or (redact(safe_text(clean(s.first_request)), 300) if s.first_request else None)
    cwd = redact(safe_text(clean(s.cwd)), 4096) if s.cwd else None
    return title, label, cwd


def prepare(s: Session, old: bytes, steps: Iterable[Step], redact: Callable[[str, int], str],
            stats: ReadStats | None = None) -> Prepared:
    """Hash every step of `steps` (one pass), compare with the stored hashes `old`, and clean and redact the
    steps from the first difference on. A store file gone midway ends the session where it could be read."""
    from segue.search.index import MAX_STEPS, _doc, _hash

    n_old = len(old) // 8
    hashes = bytearray()
    rows: list[Row] = []
    diverged: int | None = None
    n = kept = 0
    try:
        for i, step in enumerate(steps):
            if i >= MAX_STEPS:
                break
            n = i + 1
            h = _hash(step)
            hashes += h
            if diverged is None:
                if i < n_old and old[8 * i:8 * i + 8] == h:
                    kept += 1
                    continue
                diverged = i
            doc = _doc(step, redact)
            if doc is not None:
                rows.append((i, *doc))
    except FileNotFoundError:
        pass  # gone between listing and reading: indexed as far as it could be read
    title, label, cwd = shown_fields(s, redact)
    return Prepared(hashes=bytes(hashes), steps=n, diverged=diverged, rows=rows, kept=kept, title=title,
                    label=label, cwd=cwd)
