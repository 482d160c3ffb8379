"""Sessions as a terminal table, and the one-line cuts every terminal view uses (`segue list`, `segue demo`,
the editor's sample, `segue search`). Text is cleaned and invisible characters marked before it is shown;
widths count terminal cells (a wide CJK character is two, a combining mark none)."""

from __future__ import annotations

import os
import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence

from segue.quote import clean, mark_invisible

TYPE_CHECKING = False  # not typing's: a CLI query's table imports this module
if TYPE_CHECKING:
    from segue.model import Session

SHORT_ID = 8  # the fewest characters of an id the table shows (git's abbreviations start at 7)
GAP = "  "
_MARKER_RE = re.compile(r"\[REDACTED:[^\]]*\]")


def age(ts: float | None, now: float) -> str:
    if not ts:
        return "?"
    d = max(0.0, now - ts)
    for unit, secs in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= secs:
            return f"{int(d // secs)}{unit}"
    return f"{int(d)}s"


def _cell(c: str) -> int:
    from unicodedata import combining, east_asian_width

    if combining(c):
        return 0
    return 2 if east_asian_width(c) in "WF" else 1


def cells(text: str) -> int:
    """The terminal columns `text` takes."""
    return len(text) if text.isascii() else sum(map(_cell, text))


def fit(text: str, width: int) -> str:
    """The longest head of `text` that takes at most `width` cells."""
    if text.isascii():
        return text[:width]
    used = 0
    for i, c in enumerate(text):
        used += _cell(c)
        if used > width:
            return text[:i]
    return text


def _cut(text: str, width: int) -> str:
    """`text` cut to `width` cells with an ellipsis, never inside a redaction marker (a half marker reads as
    text of the session, and a reader cannot tell what was hidden)."""
    if cells(text) <= width:
        return text
    head = fit(text, max(0, width - 1))
    n = len(head)
    for m in _MARKER_RE.finditer(text):
        if m.start() >= n:
            break
        if n < m.end():
            head = head[: m.start()].rstrip()
            break
    return head + "…"


def one_line(text: str | None, width: int) -> str:
    return _cut(" ".join(mark_invisible(clean(text or "")).split()), width)


def one_line_tail(text: str | None, width: int) -> str:
    """As `one_line`, keeping the end (a path's last parts say the most)."""
    return _cut_tail(" ".join(mark_invisible(clean(text or "")).split()), width)


def _cut_tail(text: str, width: int) -> str:
    if cells(text) <= width:
        return text
    return "…" + fit(text[::-1], max(0, width - 1))[::-1]


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - cells(text))


def home_relative(path: str | None) -> str:
    """`~/…` for a path under the home directory; `?` when unknown."""
    home = os.path.expanduser("~")
    cwd = path or "?"
    return "~" + cwd[len(home):] if cwd.startswith(home + os.sep) else cwd


def short_ids(every: Iterable[str], shown: Iterable[str], least: int = SHORT_ID) -> dict[str, str]:
    """Each id of `shown` cut to its shortest prefix (at least `least` characters) that no other id of `every`
    begins with, the way git abbreviates commits: what `segue resume <prefix>` takes. (An id two runtimes share is
    ambiguous however long it is shown: its reference needs the runtime, `codex:<id>`.)"""
    wanted = list(dict.fromkeys(shown))
    heads = {sid[:least] for sid in wanted}
    # only an id that begins as a shown one does can make its abbreviation longer than `least`
    ids = sorted({sid for sid in every if sid[:least] in heads})
    out: dict[str, str] = {}
    for sid in wanted:
        if sid in out:
            continue
        i = bisect_left(ids, sid)
        need = least
        for j in (i - 1, i + 1):
            if 0 <= j < len(ids) and ids[j] != sid:
                other = ids[j]
                n = 0
                for a, b in zip(sid, other, strict=False):
                    if a != b:
                        break
                    n += 1
                need = max(need, n + 1)
        out[sid] = sid[:need]
    return out


def _widths(natural: list[int], width: int | None) -> list[int]:
    """Widths for the title, directory and branch columns: their natural widths, capped (60, 48, 24), and
    narrowed to `width` cells in all when given: the branch first, then the directory, the title last."""
    caps = [60, 48, 24]
    got = [min(n, c) for n, c in zip(natural, caps, strict=True)]
    if width is None:
        return got
    floors = [min(g, f) for g, f in zip(got, (24, 16, 8), strict=True)]
    over = sum(got) - width
    for i in (2, 1, 0):
        if over <= 0:
            break
        take = min(over, got[i] - floors[i])
        got[i] -= take
        over -= take
    return got


def render_table(sessions: Sequence[Session], now: float, ids: Mapping[str, str] | None = None,
                 width: int | None = None) -> str:
    """The listing's table. `ids`: the id to show for each session's (its shortest unambiguous prefix; among
    these sessions when not given). `width`: the terminal's columns, which the rows then fit (the branch is cut
    first, then the directory, the title last); None: no limit."""
    if ids is None:
        ids = short_ids((s.id for s in sessions), (s.id for s in sessions))
    head = ("ID", "RUNTIME", "AGE", "TITLE", "DIRECTORY", "BRANCH")
    cols: list[tuple[str, str, str]] = []
    titles: list[tuple[str, str, str]] = []
    for s in sessions:
        indent = "  ↳ " if s.parent_id else ""
        marks = ("● " if s.live else "") + ("⇄ " if s.handed_off else "")
        n = s.subagent_count
        extra = f" (+{n} subagent{'' if n == 1 else 's'})" if n and not s.parent_id else ""
        text = " ".join(mark_invisible(clean(s.title or s.first_request or "(untitled)")).split())
        sid = ids.get(s.id, s.id)
        cols.append((sid, s.runtime, age(s.updated_at or s.started_at, now)))
        titles.append((indent + marks, text, extra))
    dirs = [" ".join(mark_invisible(clean(home_relative(s.cwd))).split()) for s in sessions]
    branches = [" ".join(mark_invisible(clean(s.branch or "-")).split()) for s in sessions]
    fixed = [max([cells(h)] + [cells(c[i]) for c in cols]) for i, h in enumerate(head[:3])]
    natural = [max([5] + [cells(a) + cells(t) + cells(e) for a, t, e in titles]),
               max([9] + [cells(d) for d in dirs]), max([6] + [cells(b) for b in branches])]
    room = None if width is None else width - sum(fixed) - len(GAP) * 5
    tw, dw, bw = _widths(natural, room)
    lines = [GAP.join([*(pad(h, w) for h, w in zip(head[:3], fixed, strict=True)), pad("TITLE", tw),
                       pad("DIRECTORY", dw), "BRANCH"])]
    for (sid, rt, ag), (lead, text, extra), d, b in zip(cols, titles, dirs, branches, strict=True):
        # the subagent count is kept whole while the title has room for some of its own words
        title = lead + text + extra
        if cells(title) > tw:
            keep = extra if cells(lead) + cells(extra) + 12 <= tw else ""
            title = _cut(lead + _cut(text, max(1, tw - cells(lead) - cells(keep))) + keep, tw)
        lines.append(GAP.join([pad(sid, fixed[0]), pad(rt, fixed[1]), pad(ag, fixed[2]), pad(title, tw),
                               pad(_cut_tail(d, dw), dw), _cut(b, bw)]).rstrip())
    return "\n".join(lines)


def terminal_width() -> int | None:
    """The columns of the terminal stdout is; None when it is none (a pipe or a file gets whole rows)."""
    import shutil
    import sys

    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns
