"""Codex CLI: finding rollouts, live processes holding them, and the parent of a review subagent."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from segue.model import parse_time
from segue.stores.codex.records import decode_records, normalize
from segue.stores.text import open_regular

_ROLLOUT_RE = re.compile(r"^rollout-.*\.jsonl(?:\.zst)?$")




def open_rollouts(prefixes: tuple[str, ...], proc: str = "/proc") -> set[str]:
    """Rollout paths some process holds open (Linux /proc/<pid>/fd). Codex keeps its rollout open for
    appending while the session runs, so a holder means a live session; empty when /proc is absent."""
    held: set[str] = set()
    try:
        pids = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return held
    for pid in pids:
        fd_dir = f"{proc}/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target.startswith(prefixes) and ".jsonl" in target:
                held.add(target)
    return held


REVIEW_SCAN_MAX = 512 * 1024 * 1024  # rollouts bigger than this are not searched for a review's parent


def _review_gap(path: str, at: float) -> float | None:
    """Seconds between `at` and the nearest `entered_review_mode` event in the rollout (at most 1 s), or
    None. The event name is located by bytes, then its line is decoded (the reference decides)."""
    import mmap

    try:
        with open_regular(path, 256 * 1024) as f:
            if os.fstat(f.fileno()).st_size == 0:
                return None
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                best: float | None = None
                pos = mm.find(b"entered_review_mode")
                while pos >= 0:
                    start = mm.rfind(b"\n", 0, pos) + 1
                    end = mm.find(b"\n", pos)
                    end = len(mm) if end < 0 else end
                    for obj in decode_records(mm[start:end])[0]:
                        kind, p, ts = normalize(obj)
                        when = parse_time(ts) if kind == "event_msg" and p.get("type") == "entered_review_mode" \
                            else None
                        if when is not None and abs(when - at) <= 1.0 and (best is None or abs(when - at) < best):
                            best = abs(when - at)
                    pos = mm.find(b"entered_review_mode", end)
                return best
    except (OSError, ValueError):
        return None


def _walk(top: str) -> Iterator[str]:
    """Rollout files under `top`, any depth (YYYY/MM/DD and the legacy flat layout). Stat only."""
    stack = [top]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        names = {e.name for e in entries}
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                    continue
                if not _ROLLOUT_RE.match(e.name) or not e.is_file():
                    continue  # dangling links, FIFOs and directories named like rollouts
            except OSError:
                continue
            if e.name.endswith(".zst") and e.name[:-4] in names:
                continue  # a plain sibling wins (Codex keeps both for a moment while switching)
            yield e.path
