"""Where a read of an append-only transcript may go on from when the file has grown (the search index's
refresh of a 200 MB transcript an agent is still writing costs its new turns, not the whole file again).

A mark holds the offset of a line end after which the runtime's step builder held nothing that waits for later
lines, the number of steps given before it, that builder's state there (counters, call and record ids, digests
of the texts it compares; no session text), the file's device and inode, and digests of its first bytes and of
the bytes just before the offset. A read goes on from it only on a positive match: the same runtime and mark
version, the same file (device, inode) at least as long, the same first bytes and the same bytes before the
offset, and a builder that accepts the state. Anything else reads the file from its first line.
SEGUE_SEARCH_RESUME=0 (or SEGUE_FAST_PATHS=0: the readers' `fast`) switches it off; tests/test_search_resume.py
proves the steps the same as a read from the start. The runtimes' loops: stores/claude/resume.py,
stores/codex/resume.py.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from segue.model import Step
from segue.stores.base import Continued

VERSION = 2
MIN_SIZE = 4 * 1024 * 1024  # smaller files get no mark: read again in less time than a mark costs to keep
HEAD = 4096  # bytes at the file's start the mark's digest covers
BACK = 4096  # bytes before the offset the mark's digest covers
SNAPSHOT = 1024 * 1024  # bytes between full copies of a builder's state (the fallback of the last quiet point)


def enabled(environ: Any) -> bool:
    return str(environ.get("SEGUE_SEARCH_RESUME", "1")).strip() != "0"


def text_digest(text: object) -> bytes | None:
    """What a builder's state keeps of a text it only compares for equality (a restored one's: as it was)."""
    if isinstance(text, SameText):
        return text.digest
    if not isinstance(text, str):
        return None
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class SameText:
    """Equal to the strings whose `text_digest` it holds (a restored builder's last text: compared, never shown)."""

    __slots__ = ("digest",)

    def __init__(self, digest: bytes) -> None:
        self.digest = digest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and text_digest(other) == self.digest

    def __hash__(self) -> int:
        return hash(self.digest)


def _digest(fd: int, start: int, end: int) -> bytes | None:
    data = os.pread(fd, end - start, start)
    return hashlib.blake2b(data, digest_size=16).digest() if len(data) == end - start else None


def going_on(f: BinaryIO, mark: bytes | None, runtime: str, restore: Callable[[Any], bool]) -> tuple[int, int]:
    """(offset, steps before it) to go on from, `f` positioned there and the builder restored; (0, 0): from the
    first line, nothing changed."""
    if mark is None:
        return 0, 0
    try:
        version, rt, dev, ino, offset, head, back, steps, state = marshal.loads(mark)
        if version != VERSION or rt != runtime or not isinstance(offset, int) or offset <= 0 \
                or not isinstance(steps, int) or steps < 0:
            return 0, 0
        fd = f.fileno()
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (dev, ino) or st.st_size < offset:
            return 0, 0
        if _digest(fd, 0, min(HEAD, offset)) != head or _digest(fd, max(0, offset - BACK), offset) != back:
            return 0, 0
        if not restore(state):
            return 0, 0
    except (ValueError, TypeError, EOFError, OSError):
        return 0, 0
    f.seek(offset)
    return offset, steps


def make(f: BinaryIO, runtime: str, offset: int, steps: int, state: Any) -> bytes | None:
    """The mark of `f` at `offset` (a line end), after `steps` steps, with the builder's `state` there."""
    if offset < MIN_SIZE:
        return None
    fd = f.fileno()
    st = os.fstat(fd)
    head, back = _digest(fd, 0, min(HEAD, offset)), _digest(fd, max(0, offset - BACK), offset)
    if head is None or back is None:
        return None
    return marshal.dumps((VERSION, runtime, st.st_dev, st.st_ino, offset, head, back, steps, state))


def small(f: BinaryIO) -> bool:
    """Too small for a mark: read without noting anything."""
    return os.fstat(f.fileno()).st_size < MIN_SIZE


def owning(f: BinaryIO, read: Callable[[BinaryIO], Continued]) -> Continued:
    """`read(f)`, which closes `f` when its steps end (or, unread, at `close()`)."""
    try:
        out = read(f)
    except BaseException:
        f.close()
        raise
    inner = out.steps

    def closing() -> Iterator[Step]:
        with f:
            yield from inner

    out.steps = closing()
    out.closer = f.close  # (an unstarted generator's `with` never runs)
    return out
