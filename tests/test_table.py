"""The human `segue list` table: one row per session, subagent counts in plain English."""

from __future__ import annotations

from segue.model import Session
from segue.table import render_table


def session(sid: str, subagents: int = 0, parent: str | None = None) -> Session:
    return Session(runtime="claude", id=sid, store_path=f"/s/{sid}.jsonl", title=f"task {sid}", cwd="/w",
                   updated_at=1_000.0, parent_id=parent, subagent_count=subagents)


def test_subagent_counts_read_as_english() -> None:
    rows = render_table([session("a", 1), session("b", 2), session("c"), session("d", 3, parent="b")],
                        now=1_060.0).splitlines()
    assert rows[1].count("task a (+1 subagent)") == 1 and "subagents" not in rows[1]
    assert "task b (+2 subagents)" in rows[2]
    assert "(+" not in rows[3]
    assert "↳ task d" in rows[4] and "(+" not in rows[4]  # a subagent's own count is not shown
