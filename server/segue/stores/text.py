"""Text and file helpers every reader shares: step caps, command-output bounds, the marker-keeping cap,
opening only regular files, and the fast-path switch.

The handoff-marker pattern itself belongs to `segue.lineage` (which finds markers); caps here only make
sure a cut never drops the marker line.
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from segue.lineage import HANDOFF_LINE, MARKER_PREFIX
from segue.stores.base import MAX_TEXT, Env

STEP_TEXT = 16 * 1024  # cap on one step's text: memory stays flat however big the session
OUTPUT_TAIL = 400  # characters of a command's output a brief shows (its end)
# Characters of a command's output a reader keeps in `Step.output`: the shown tail plus context, so that the
# brief redacts a secret whose opening line lies before the tail (a PEM block's BEGIN line) before cutting.
OUTPUT_KEEP = 8 * 1024

FAST_PATHS_VAR = "SEGUE_FAST_PATHS"


def fast_paths(env: Env) -> bool:
    """Readers' fast paths are on unless `SEGUE_FAST_PATHS=0` (or `off`, `false`, `no`): then every record
    goes through the reference path (decode, then read the decoded object)."""
    v = env.get(FAST_PATHS_VAR)
    return v is None or v.strip().lower() not in ("0", "off", "false", "no")


def output_tail(text: str | None) -> str | None:
    """What a reader keeps of a command's output (None for none)."""
    if not text:
        return None
    return text[-OUTPUT_KEEP:]


def cap(text: str, limit: int = MAX_TEXT) -> str:
    """Cap at `limit` characters, keeping Segue's handoff marker line intact even when it lies past the cut."""
    if len(text) <= limit:
        return text
    if MARKER_PREFIX in text:
        for m in HANDOFF_LINE.finditer(text):
            if m.end() > limit - 1:
                marker = m.group(0)
                keep = limit - len(marker) - 2
                if keep > 0:
                    return text[:keep] + "…\n" + marker
    return text[: limit - 1] + "…"


def cap_bytes(text: str, limit: int = MAX_TEXT) -> str:
    """Cap at `limit` UTF-8 bytes without splitting a character, keeping a handoff marker line whole."""
    if len(text) * 4 <= limit:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    cut = data[:limit].decode("utf-8", "ignore")
    if MARKER_PREFIX not in text:
        return cut
    m = HANDOFF_LINE.search(text)
    marker = m.group(0) if m else ""
    if not marker or marker in cut or len(marker.encode("utf-8")) >= limit:
        return cut
    room = limit - len(marker.encode("utf-8")) - 1
    return data[:room].decode("utf-8", "ignore") + "\n" + marker


def file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def open_regular(path: str, buffering: int = -1) -> BinaryIO:
    """Open only regular files: O_NONBLOCK keeps a FIFO from hanging the open, fstat then refuses it."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file ({file_kind(st.st_mode)})")
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


BOM = b"\xef\xbb\xbf"


def strip_bom(raw: bytes) -> bytes:
    """A UTF-8 byte-order mark at a file's start is not part of its first record."""
    return raw[3:] if raw.startswith(BOM) else raw
