"""The "1 % of sessions changed" step: new activity in some sessions, as each runtime writes it, and the undo.

Claude Code, Codex and Gemini CLI (its JSONL generation) append records to the transcript; Cline rewrites the
messages document and updates its `sessions` row; OpenCode inserts message and part rows and bumps
`session.time_updated`. `undo` puts every touched file back byte for byte with its old mtime, so the cached
corpus stays what the generator wrote.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench.gen.common import dumps, iso

BIG = 8_000_000  # transcripts above this are left alone (rewriting a 60 MB Cline document is not a "1 %" change)


class Change:
    def __init__(self, backup_dir: Path) -> None:
        self.backup_dir = backup_dir
        self.truncate: list[tuple[str, int, int]] = []  # (path, size, mtime_ns)
        self.copies: list[tuple[str, str, int]] = []  # (path, backup, mtime_ns)

    def keep_copy(self, path: str) -> None:
        if any(p == path for p, _b, _m in self.copies):
            return
        self.backup_dir.mkdir(parents=True, exist_ok=True)
        b = str(self.backup_dir / f"{len(self.copies)}-{os.path.basename(path)}")
        shutil.copyfile(path, b)
        self.copies.append((path, b, os.stat(path).st_mtime_ns))

    def undo(self) -> None:
        for path, size, mtime in self.truncate:
            os.truncate(path, size)
            os.utime(path, ns=(mtime, mtime))
        for path, b, mtime in self.copies:
            for side in ("-wal", "-shm"):
                if os.path.exists(path + side):
                    os.unlink(path + side)
            shutil.copyfile(b, path)
            os.utime(path, ns=(mtime, mtime))
            os.unlink(b)
        self.truncate.clear()
        self.copies.clear()


def choose(sessions: list[dict[str, Any]], fraction: float, seed: int) -> list[dict[str, Any]]:
    """Sessions a user could have touched: current-generation stores, not the huge brief targets."""
    pool = [s for s in sessions if s["gen"] in ("C1", "C2", "C3", "X2", "X3", "X4", "X5", "E2", "S1", "G2")
            and s.get("path") and (s["path"].endswith(".db") or os.path.getsize(s["path"]) < BIG)]
    k = max(1, round(fraction * len(sessions)))
    return random.Random(seed).sample(pool, min(k, len(pool)))


def choose_runtime(sessions: list[dict[str, Any]], runtime: str | None, k: int, seed: int) -> list[dict[str, Any]]:
    """`k` sessions of one runtime (None: any) a user could have touched (as `choose`)."""
    pool = [s for s in choose(sessions, 1.0, seed) if runtime is None or s["runtime"] == runtime]
    return random.Random(seed).sample(pool, min(k, len(pool)))


def choose_mixed(sessions: list[dict[str, Any]], per_runtime: dict[str, int], seed: int) -> list[dict[str, Any]]:
    """The issue's mixed case, e.g. {"claude": 20, "opencode": 20}: so many sessions of each runtime."""
    return [s for rt, k in per_runtime.items() for s in choose_runtime(sessions, rt, k, seed)]


def inside(path: str | Path, home: Path) -> bool:
    """Is this file under `home`, once both are resolved (a corpus reached through a symlink is still itself)?"""
    return os.path.realpath(path).startswith(f"{os.path.realpath(home)}{os.sep}")


def apply(chosen: list[dict[str, Any]], home: Path, backup_dir: Path) -> Change:
    ch = Change(backup_dir)
    now = time.time()
    for s in chosen:  # (a corpus copied with cp -a still names the original's files: never change those)
        if s.get("path") and not inside(s["path"], home):
            raise ValueError(f"{s['path']} is outside {home}: expected.json is another corpus'")
    oc: list[dict[str, Any]] = []
    cl: list[dict[str, Any]] = []
    for s in chosen:
        rt = s["runtime"]
        if rt in ("claude", "codex", "gemini"):
            _append_jsonl(ch, s, now)
        elif rt == "opencode":
            oc.append(s)
        else:
            cl.append(s)
    if oc:
        _opencode(ch, home / ".local" / "share" / "opencode" / "opencode.db", oc, now)
    if cl:
        _cline(ch, home / ".cline" / "data" / "db" / "sessions.db", cl, now)
    return ch


def _append_jsonl(ch: Change, s: dict[str, Any], now: float) -> None:
    path = s["path"]
    st = os.stat(path)
    ch.truncate.append((path, st.st_size, st.st_mtime_ns))
    text = "Also run the linter on the files you touched."
    if s["runtime"] == "claude":
        recs = [{"parentUuid": None, "isSidechain": False, "type": "user", "message": {"role": "user", "content": text},
                 "uuid": f"bench-{int(now * 1000)}", "timestamp": iso(now), "sessionId": s["id"], "version": "2.1.197",
                 "cwd": "/home/me/src", "gitBranch": "main"},
                {"type": "last-prompt", "lastPrompt": text, "leafUuid": f"bench-{int(now * 1000)}",
                 "sessionId": s["id"]}]
    elif s["runtime"] == "gemini":  # a typed turn and the CLI's lastUpdated after it
        recs = [{"id": f"bench-{int(now * 1000)}", "timestamp": iso(now), "type": "user", "content": [{"text": text}]},
                {"$set": {"lastUpdated": iso(now)}}]
    else:
        recs = [{"timestamp": iso(now), "type": "event_msg", "payload": {"type": "user_message", "message": text}},
                {"timestamp": iso(now), "type": "event_msg",
                 "payload": {"type": "task_complete", "last_agent_message": "Linted: no findings."}}]
    with open(path, "a", encoding="utf-8") as f:
        f.write("".join(dumps(r) + "\n" for r in recs))


def _opencode(ch: Change, db: Path, chosen: list[dict[str, Any]], now: float) -> None:
    ch.keep_copy(str(db))
    con = sqlite3.connect(db)
    ms = int(now * 1000)
    for i, s in enumerate(chosen):
        mid, pid = f"msg_bench{ms:x}{i:04d}", f"prt_bench{ms:x}{i:04d}"
        con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, s["id"], ms, ms, json.dumps(
            {"role": "user", "time": {"created": ms}, "agent": "build"})))
        con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, s["id"], ms, ms, json.dumps(
            {"type": "text", "text": "Also run the linter."})))
        con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (ms, s["id"]))
    con.commit()
    con.close()


def _cline(ch: Change, db: Path, chosen: list[dict[str, Any]], now: float) -> None:
    ch.keep_copy(str(db))
    con = sqlite3.connect(db)
    for s in chosen:
        path = s["path"]
        ch.keep_copy(path)
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        doc.setdefault("messages", []).append({"id": f"msg_bench{int(now)}", "role": "user", "content": [
            {"type": "text", "text": '<user_input mode="act">Also run the linter.</user_input>'}],
            "ts": int(now * 1000)})
        doc["updated_at"] = iso(now)
        tmp = path + ".bench.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)  # Cline rewrites the document on every turn
        os.replace(tmp, path)
        con.execute("UPDATE sessions SET updated_at = ?, ended_at = ? WHERE session_id = ?",
                    (iso(now), iso(now), s["id"]))
    con.commit()
    con.close()
