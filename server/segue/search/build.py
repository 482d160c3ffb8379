"""What one session contributes to the search index, computed apart from the index (no SQLite): its steps'
hashes, where they first differ from what the index holds, the rows to write from there on and the shown
title, label and directory, all redacted. `SearchIndex.refresh` writes it.

The serial build (`SearchIndex._index_session`) streams the same computation straight into SQLite; this form
exists so that worker processes (segue.search.workers) can do the expensive part, reading and redacting, on
every core while the one writer only writes. Both use `index._hash` and `index._doc`, and a test proves the
index they build is the same row for row.

`Distinct` lets a worker clean and redact each distinct text once: commands, paths and directories repeat
across sessions, and their redaction is most of a worker's time after reading.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable

from segue.record import factory, record

TYPE_CHECKING = False  # not typing's: a CLI query imports this module (through segue.search.index)
if TYPE_CHECKING:
    from typing import Any

    from segue.model import ReadStats, Session, Step
    from segue.redact import Redactor

Row = tuple[int, str, str, "int | None"]  # (step index, indexed text, kind, exit code)


@record
class Prepared:
    hashes: bytes  # 8 bytes per step, as stored in `sessions.hashes`
    steps: int  # how many steps the session has now
    diverged: int | None  # the first step that differs from the stored hashes (None: none differs)
    rows: list[Row] = factory(list)  # rows of the steps from `diverged` on (index-relative)
    kept: int = 0  # steps before `diverged` that matched: not written again
    learned_at: int | None = None  # the step after which the session's Redactor had found a value (None: never)
    mark: bytes | None = None  # where a later read may go on from (segue.stores.base.Continued)
    title: str | None = None
    label: str | None = None
    cwd: str | None = None
    chars: int | None = None  # the rows' characters of text (None: not counted): what the build's bounds weigh


def shown_fields(s: Session, redact: Callable[[str, int], str]) -> tuple[str | None, str | None, str | None]:
    """(title, label, cwd) as the index stores them: cleaned and redacted."""
    from segue.search.index import cleaned, safe_text

    title = redact(safe_text(cleaned(s.title)), 300) if s.title else None
    label = title or (redact(safe_text(cleaned(s.first_request)), 300) if s.first_request else None)
    cwd = redact(safe_text(cleaned(s.cwd)), 4096) if s.cwd else None
    return title, label, cwd


def recheck(text: str, memory: Any) -> str:
    """An indexed text with the values its session's Redactor found anywhere in the session redacted too: a
    secret learned at step 50 (under a key) must not stay bare at step 3, as a brief's last pass ensures."""
    from segue.search.index import hide_markers

    out, n = memory.redact_known(text)
    return hide_markers(out) if n else text


class NeedsWholeRead(Exception):
    """A read on from a mark found a value to redact: every row of the session must be written again with it,
    and `prepare` holds only the rows after the mark (the caller reads the session from its start)."""


def prepare(s: Session, old: bytes, steps: Iterable[Step], redact: Callable[[str, int], str],
            stats: ReadStats | None = None, text_of: Callable[[str, str], str | None] | None = None,
            memory: Redactor | None = None) -> Prepared:
    """Hash every step of `steps` (one pass), compare with the stored hashes `old`, and clean and redact the
    steps from the first difference on. A store file gone midway ends the session where it could be read.
    `text_of` is `index.indexed_text` with `redact` (`Distinct.session`'s, remembering distinct texts).
    `memory`: the session's Redactor behind `redact`. The steps kept are redacted again (unwritten) so that it
    learns what they taught the pass that wrote them, and when it has found a value, every row of the session
    is written again with the values it found (`recheck`): the index holds what a fresh build would."""
    from segue.search.index import MAX_STEPS, _doc, _hash

    n_old = len(old) // 8
    # a read on from an earlier one's mark (`Continued`): its first `start` steps are the stored ones
    start = getattr(steps, "start", 0)
    if start > n_old:
        raise ValueError("steps go on from a mark the stored hashes do not reach")
    hashes = bytearray(old[:8 * start])
    rows: list[Row] = []
    kept_rows: list[Row] = []
    learned_at: int | None = None
    diverged: int | None = None
    n = kept = start
    try:
        for i, step in enumerate(steps, start):
            if i >= MAX_STEPS:
                break
            n = i + 1
            h = _hash(step)
            hashes += h
            if diverged is None:
                if i < n_old and old[8 * i:8 * i + 8] == h:
                    kept += 1
                    if memory is not None:
                        doc = _doc(step, redact, text_of)
                        if learned_at is None and memory.learned_count():
                            learned_at = i
                        if doc is not None:
                            kept_rows.append((i, *doc))
                    continue
                diverged = i
            doc = _doc(step, redact, text_of)
            if learned_at is None and memory is not None and memory.learned_count():
                learned_at = i
            if doc is not None:
                rows.append((i, *doc))
    except FileNotFoundError:
        pass  # gone between listing and reading: indexed as far as it could be read
    if memory is not None and memory.learned_count():
        if start:  # the rows before the mark are not here to be written again with it
            raise NeedsWholeRead()
        if kept:  # the kept rows were written without what later steps taught: all of them again
            rows, diverged, kept = kept_rows + rows, 0, 0
        rows = [(i, recheck(text, memory), kind, code) for i, text, kind, code in rows]
    title, label, cwd = shown_fields(s, redact)
    mark = getattr(steps, "mark", None) if learned_at is None else None
    return Prepared(hashes=bytes(hashes), steps=n, diverged=diverged, rows=rows, kept=kept, title=title,
                    label=label, cwd=cwd, learned_at=learned_at, mark=mark, chars=sum(len(r[1]) for r in rows))


MEMO_CHARS = 2_000_000  # characters of text remembered per process (then it starts over): a few MB
MEMO_LONGEST = 4096  # longer texts are redacted every time (they rarely repeat; each would take a big share)
_MISSING = object()


def distinct_enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_DISTINCT", "1").strip().lower() not in ("0", "off", "false", "no")


class Distinct:
    """Each distinct text of a build cleaned and redacted once per process, with the same result as redacting
    it every time.

    What the brief's redaction makes of a text depends on the text, its cap, the Redactor's exact values (one
    Redactor for the whole build) and the values its session's Redactor has found so far (Redactor.scoped:
    one memory per session). So a result is remembered only when that memory was empty before and is still
    empty after (the text taught it nothing and nothing earlier could change it), and a remembered result is
    used only while the session's memory is empty; once a session's Redactor has found a value, the rest of
    that session is redacted text by text as before. A redaction that failed (withheld) is not remembered.
    SEGUE_SEARCH_DISTINCT=0 switches it off."""

    def __init__(self, redactor: Redactor, budget: int = MEMO_CHARS) -> None:
        self.redactor = redactor
        self.budget = budget
        self._memo: dict[Hashable, Any] = {}
        self._chars = 0
        from segue.redact.common import WITHHELD

        self.withheld = WITHHELD

    def session(self) -> _Session:
        return _Session(self, self.redactor.scoped())

    def _store(self, key: Hashable, text: str, value: Any) -> None:
        if len(text) > MEMO_LONGEST:
            return
        if self._chars + len(text) > self.budget:  # bounded: start over (what repeats comes back soon)
            self._memo.clear()
            self._chars = 0
        self._memo[key] = value
        self._chars += len(text)


class _Session:
    """One session's redaction (its own memory of found values), remembering through its `Distinct`."""

    def __init__(self, distinct: Distinct, scoped: Redactor) -> None:
        self._d = distinct
        self._scoped = scoped
        self._fresh = True  # the scoped Redactor has found no value yet (its memory only grows)

    @property
    def memory(self) -> Redactor:
        """The session's Redactor (its memory of found values)."""
        return self._scoped

    def _plain(self, text: str, cap: int) -> str:
        return self._scoped.excerpt(text, cap)[0]

    def redact(self, text: str, cap: int) -> str:
        """Redactor.excerpt(text, cap)[0] of this session's Redactor."""
        return self._through((cap, text), text, lambda: self._plain(text, cap))

    def text_of(self, kind: str, text: str) -> str | None:
        """index.indexed_text(kind, text, self's plain redaction)."""
        if self._fresh:  # `_through`'s lookup, inlined: most steps of a build are a text met before
            hit = self._d._memo.get((kind, text), _MISSING)
            if hit is not _MISSING:
                return hit  # type: ignore[no-any-return]
        from segue.search.index import indexed_text

        return self._through((kind, text), text, lambda: indexed_text(kind, text, self._plain))

    def _through(self, key: Hashable, text: str, compute: Callable[[], Any]) -> Any:
        if not self._fresh:
            return compute()
        hit = self._d._memo.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        out = compute()
        if self._scoped.learned_count():  # this text taught the session a value: from here on, text by text
            self._fresh = False
        elif not (isinstance(out, str) and self._d.withheld in out):
            self._d._store(key, text, out)
        return out
