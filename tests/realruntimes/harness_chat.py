"""Helpers for the OpenCode and Cline fixtures (the Chat Completions runtimes), on top of harness.py.

The two fixtures are generated as a pair: each runtime's `continued` session names the other runtime's
`one` session, so both `one` sessions must exist before either `continued` session starts.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.realruntimes import harness as h

# ------------------------------------------------------------------ processes


def stop_pid(pid: int, expect_in_cmdline: str, timeout: float = 10) -> bool:
    """Stop exactly one process we know the pid of, after checking it is what we think it is."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    if expect_in_cmdline not in cmdline:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    return True


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def wait_for(cond: Callable[[], bool], timeout: float, what: str, step: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


class Tmux:
    """A private tmux server for driving one TUI whose pid we keep (the CLI may ignore the hang-up)."""

    def __init__(self, sock: str) -> None:
        self.sock = sock
        self.pid: int | None = None

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True,
                              text=True, check=check)

    def start(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        """argv in a detached 200x50 pane; `exec` makes the pane's pid the CLI's own pid."""
        shell = "exec env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + \
            shlex.join(argv)
        self._tmux("new-session", "-d", "-s", "t", "-x", "200", "-y", "50", "-c", str(cwd), shell)
        self._tmux("set-option", "-t", "t", "remain-on-exit", "on", check=False)
        out = self._tmux("display-message", "-p", "-t", "t", "#{pane_pid}", check=False).stdout.strip()
        self.pid = int(out) if out.isdigit() else None

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "t", "-l", text)

    def key(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t", check=False).stdout

    def dead(self) -> bool:
        out = self._tmux("display-message", "-p", "-t", "t", "#{pane_dead}", check=False)
        return out.stdout.strip() == "1"

    def close(self, binary: Path) -> None:
        if self.pid is not None and not self.dead():
            stop_pid(self.pid, str(binary))
        self._tmux("kill-server", check=False)


# ------------------------------------------------------------------ SQLite copies

def immutable_ro(db: Path) -> sqlite3.Connection:
    """Read one of our own copies without creating side files (never use this on a live store)."""
    return sqlite3.connect(f"{db.absolute().as_uri()}?immutable=1", uri=True)


def wal_rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows of `sql` as SQLite sees a live capture (db + -wal), read from a scratch copy."""
    with tempfile.TemporaryDirectory() as tmp:
        for suffix in ("", "-wal", "-shm"):
            if Path(f"{db}{suffix}").exists():
                shutil.copy2(f"{db}{suffix}", Path(tmp) / f"x.db{suffix}")
        con = sqlite3.connect(Path(tmp, "x.db").as_uri() + "?mode=ro", uri=True)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()


def check_ids(db: Path, sql: str, sessions: list[h.SessionFacts]) -> None:
    """Every recorded session is a row of the fixture DB with the recorded parent (`sql`: id, parent)."""
    con = immutable_ro(db)
    try:
        rows = dict(con.execute(sql).fetchall())
    finally:
        con.close()
    for s in sessions:
        if rows.get(s.id, "missing") != s.parent_id:
            raise RuntimeError(f"session {s.id} is not in {db.name} as recorded (parent {s.parent_id})")


# ------------------------------------------------------------------ the pair

_pairs_done: set[Path] = set()


def generate_pair(out_dir: Path, runtime: str) -> None:
    """Generate the OpenCode and Cline fixtures together (called by either runtime's `generate`)."""
    real = (out_dir if out_dir.name != runtime else out_dir.parent).resolve()
    if real in _pairs_done:  # the dispatcher asked for both: the first call made both
        return
    if h.isolated():
        _run_pair(real)
    else:
        rc = subprocess.call(["unshare", "-n", sys.executable, "-m", "tests.realruntimes.harness_chat",
                              str(real)], cwd=h.REPO, env={**os.environ, "PYTHONPATH": str(h.REPO)})
        if rc != 0:
            raise RuntimeError(f"OpenCode/Cline fixture generation failed (rc {rc})")
    _pairs_done.add(real)


def _run_pair(real: Path) -> None:
    from tests.realruntimes import fake_chat, fakemodel, gen_cline, gen_opencode

    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    server, port = fakemodel.start(h.DEFAULT_PORT)  # our own namespace: a fixed port keeps configs stable
    try:
        oc, cl = gen_opencode.OpenCodeGen(port), gen_cline.ClineGen(port)
        for g in (oc, cl):
            g.setup()
            g.run_one()
            g.run_sub()
            g.run_secret()
        oc.run_continued(cl.runtime, cl.one_id)
        cl.run_continued(oc.runtime, oc.one_id)
        for g in (oc, cl):
            g.write_fixture(real / g.runtime)
    finally:
        fake_chat.observer = None
        server.shutdown()


if __name__ == "__main__":
    if not h.isolated():
        sys.exit("run me through generate_pair (needs an isolated network namespace)")
    _run_pair(Path(sys.argv[1]))
