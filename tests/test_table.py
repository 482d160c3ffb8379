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


def test_short_ids_are_unambiguous_prefixes_at_least_eight_long() -> None:
    import random

    from segue.listing import resolve
    from segue.table import short_ids

    rng = random.Random(7)
    # ids as the runtimes make them: time-ordered (Cline's milliseconds, UUIDv7-like, OpenCode's ses_) share long
    # heads; random UUIDs share short ones; one id is a prefix of another
    ids = [str(1733011234567 + rng.randrange(0, 90_000)) for _ in range(300)]
    ids += [f"019a{rng.randrange(16**8):08x}-{rng.randrange(16**4):04x}" for _ in range(300)]
    ids += [f"ses_{rng.randrange(16**3):03x}ffe{rng.randrange(16**14):014x}" for _ in range(300)]
    ids += ["abc", "abcdefghij", "abcdefghijk"]
    sessions = [Session(runtime="codex", id=i, store_path=f"/s/{i}") for i in dict.fromkeys(ids)]
    shown = short_ids((s.id for s in sessions), (s.id for s in sessions))
    for s in sessions:
        short = shown[s.id]
        assert s.id.startswith(short) and len(short) >= min(8, len(s.id))
        assert resolve(sessions, short) is s  # what the table shows is what `segue resume <id>` takes
        if len(short) > 8:  # no shorter prefix would do
            assert any(o.id.startswith(short[:-1]) for o in sessions if o is not s)


def test_rows_fit_the_terminal_counting_wide_characters() -> None:
    from segue.table import cells

    wide = Session(runtime="claude", id="1d5f0c9e-aaaa", store_path="/s/1", cwd="/home/u/projects/very/deep/tree/app",
                   title="日本語のタイトルでセッションを説明する長い文章です。" * 3,
                   branch="feature/long-branch-name-x", updated_at=1_000.0)
    plain = Session(runtime="codex", id="2e6a1b0f-bbbb", store_path="/s/2", cwd="/w", title="fix the flaky test " * 6,
                    updated_at=1_000.0)
    for width in (80, 100, 132):
        lines = render_table([wide, plain], now=1_060.0, width=width).splitlines()
        assert all(cells(line) <= width for line in lines), width
        assert lines[1].startswith("1d5f0c9e  claude") and "…" in lines[1]
        assert "/app" in lines[1]  # a directory is cut at its head: its last parts say the most
    unlimited = render_table([wide, plain], now=1_060.0).splitlines()  # a pipe: the columns' own caps
    assert max(cells(line) for line in unlimited) > 132
    assert cells("日本") == 4 and cells("e\u0301") == 1


def test_a_cut_never_splits_a_redaction_marker() -> None:
    from segue.table import one_line

    text = "set the password to [REDACTED:password-prose] and restart the api"
    for width in range(10, len(text) + 2):
        cut = one_line(text, width)
        assert "[REDACTED:password-prose]" in cut or "[" not in cut, cut
        assert len(cut) <= width
    assert one_line(text, len(text)) == text
    assert one_line(text, 30) == "set the password to…"  # (a control: plain cutting would end in "[REDACT")
