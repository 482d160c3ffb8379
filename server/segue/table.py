"""Sessions as a terminal table, and the one-line cuts every terminal view uses (`segue list`, `segue demo`,
the editor's sample, `segue search`). Text is cleaned and invisible characters marked before it is shown."""

from __future__ import annotations

import os
from collections.abc import Sequence

from segue.quote import clean, mark_invisible

TYPE_CHECKING = False  # not typing's: a CLI query's table imports this module
if TYPE_CHECKING:
    from segue.model import Session


def age(ts: float | None, now: float) -> str:
    if not ts:
        return "?"
    d = max(0.0, now - ts)
    for unit, secs in (("d", 86400), ("h", 3600), ("m", 60)):
        if d >= secs:
            return f"{int(d // secs)}{unit}"
    return f"{int(d)}s"


def one_line(text: str | None, width: int) -> str:
    t = " ".join(mark_invisible(clean(text or "")).split())
    return t if len(t) <= width else t[: width - 1] + "…"


def home_relative(path: str | None) -> str:
    """`~/…` for a path under the home directory; `?` when unknown."""
    home = os.path.expanduser("~")
    cwd = path or "?"
    return "~" + cwd[len(home):] if cwd.startswith(home + os.sep) else cwd


def render_table(sessions: Sequence[Session], now: float) -> str:
    rows = [("RUNTIME", "AGE", "TITLE", "DIRECTORY", "BRANCH")]
    for s in sessions:
        indent = "  ↳ " if s.parent_id else ""
        marks = ("● " if s.live else "") + ("⇄ " if s.handed_off else "")
        n = s.subagent_count
        extra = f" (+{n} subagent{'' if n == 1 else 's'})" if n and not s.parent_id else ""
        title = indent + marks + one_line(s.title or s.first_request or "(untitled)", 60 - len(indent)) + extra
        rows.append((s.runtime, age(s.updated_at or s.started_at, now), title, one_line(home_relative(s.cwd), 48),
                     one_line(s.branch or "-", 24)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4] for r in rows)
