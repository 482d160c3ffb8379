"""Changes made to copies of the real runtimes' stores (tests/fixtures/real, copied under one root with a
directory per runtime), shared by the tests that prove a quick answer (the warm listing, the quick search, the
search index's incremental update) notices them. Each takes the copies' root."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from tests.conftest import real_fixture


def claude_transcript(root: Path) -> Path:
    """The copied transcript of the Claude Code fixture's "one" scenario."""
    exp = next(s for s in real_fixture("claude")[1]["sessions"] if s["scenario"] == "one")
    return next((root / "claude").rglob(f"{exp['id']}.jsonl"))


def append_claude_reply(root: Path, text: str, n: int | None = None) -> Path:
    """Append an assistant reply saying ``text`` to the "one" transcript, as Claude Code appends a turn (`n`: the
    n-th of several, each with its own message id and uuid)."""
    path = claude_transcript(root)
    recs = [json.loads(ln) for ln in path.read_text().splitlines()]
    msg = next(r for r in reversed(recs) if r.get("type") == "assistant"
               and r["message"]["content"][0].get("type") == "text")
    msg["message"]["content"] = [{"type": "text", "text": text}]
    msg["message"]["id"] = "msg_zebrafish" if n is None else f"msg_appended_{n}"
    msg["parentUuid"], msg["uuid"] = msg["uuid"], ("00000000-0000-4000-8000-000000000001" if n is None
                                                   else f"00000000-0000-4000-9000-{n:012d}")
    with open(path, "a") as f:
        f.write(json.dumps(msg, separators=(",", ":")) + "\n")
    return path


def new_file_in_project(root: Path) -> None:
    p = claude_transcript(root)
    shutil.copy(p, p.with_name("00000000-0000-4000-8000-00000000abcd.jsonl"))


def new_project(root: Path) -> None:
    p = claude_transcript(root)
    d = p.parent.parent / "-tmp-another-project"
    d.mkdir()
    shutil.copy(p, d / "00000000-0000-4000-8000-00000000abce.jsonl")


def remove_rollout(root: Path) -> None:
    next((root / "codex").rglob("rollout-*.jsonl")).unlink()


def rename_opencode_sessions(root: Path, bump_time: bool = False) -> None:
    """Rename every OpenCode session in the copied database (and move its update time on, if asked)."""
    db = next((root / "opencode").rglob("opencode*.db"))
    con = sqlite3.connect(db)
    bump = ", time_updated = time_updated + 1000" if bump_time else ""
    con.execute("UPDATE session SET title = title || ' (renamed)'" + bump)
    con.commit()
    con.close()
    for side in ("-wal", "-shm"):
        Path(str(db) + side).unlink(missing_ok=True)


def cline_session(root: Path) -> None:
    d = next(p for p in (root / "cline").rglob("sessions") if p.is_dir())
    (d / "new-session-dir").mkdir()


def gemini_project_root(root: Path) -> None:
    """Which project a Gemini folder is lives in a file's content: changed here with its size and mtime kept."""
    f = next((root / "gemini").rglob(".project_root"))
    st = f.stat()
    text = f.read_text(encoding="utf-8")
    f.write_text(text[:-1] + ("x" if text[-1:] != "x" else "y"), encoding="utf-8")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
