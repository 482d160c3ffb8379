"""Claude Code discovery and liveness: where the stores are, which files are sessions or subagents, and
which sessions a running Claude Code process holds right now. Stat and tiny JSON files only."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from segue.model import Session
from segue.stores.base import Env, Location, Reader, Source, fingerprint, loads, pid_alive
from segue.stores.claude.records import KIND_AGENT, KIND_SESSION, KIND_SUBAGENT, RUNTIME
from segue.stores.text import open_regular

LIVE_TTL = 2.0  # seconds the live-pid map is reused across summarize() calls of one listing


class Discovery(Reader):
    """The parts of the Claude Code reader that find sources and live sessions."""

    runtime = RUNTIME

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self._live: tuple[float, dict[str, int]] | None = None
        self._root_list = self._compute_roots()
        self._prefixes = [(str(root) + os.sep, prio) for root, _how, prio in self._root_list]

    def _roots(self) -> list[tuple[Path, str, int]]:
        return self._root_list

    def _compute_roots(self) -> list[tuple[Path, str, int]]:
        """(root, how to override, priority). The primary root wins over the XDG one for the same id."""
        primary = self.env.path("CLAUDE_CONFIG_DIR") or self.env.home / ".claude"
        xdg = (self.env.path("XDG_CONFIG_HOME") or self.env.home / ".config") / "claude"
        return [(primary, "set CLAUDE_CONFIG_DIR", 1),
                (xdg, "set XDG_CONFIG_HOME (older Claude Code builds kept sessions in $XDG_CONFIG_HOME/claude)", 0)]

    def _existing_roots(self) -> list[tuple[Path, int]]:
        seen: set[str] = set()
        out = []
        for root, _how, prio in self._roots():
            if not (root / "projects").is_dir():
                continue
            real = os.path.realpath(root)
            if real in seen:
                continue
            seen.add(real)
            out.append((root, prio))
        return out

    def locations(self) -> list[Location]:
        return [Location(str(root / "projects"), (root / "projects").is_dir(), how)
                for root, how, _prio in self._roots()]

    def sources(self) -> Iterator[Source]:
        for root, _prio in self._existing_roots():
            for proj in scandir(root / "projects"):
                if not is_dir(proj):
                    continue
                for e in scandir(proj.path):
                    name = e.name
                    if name.endswith(".jsonl"):
                        # Non-regular *.jsonl entries (dangling links, FIFOs, directories) still yield a
                        # source: summarize() refuses them with a reason instead of losing them silently.
                        kind = KIND_AGENT if name.startswith("agent-") else KIND_SESSION
                        yield Source(RUNTIME, e.path, fingerprint(e.path), kind)
                    elif not name.startswith(".") and is_dir(e):
                        yield from self._subagent_sources(os.path.join(e.path, "subagents"))

    def _subagent_sources(self, sub: str, depth: int = 0) -> Iterator[Source]:
        # subagents/agent-*.jsonl and subagents/workflows/<wf>/agent-*.jsonl (workflow dirs may be
        # symlinks; the depth cap stops link loops). Workflow dirs also hold journal.jsonl: not a transcript.
        if depth > 3:
            return
        for e in scandir(sub):
            if e.name.endswith(".jsonl"):
                if e.name.startswith("agent-"):
                    meta = e.path[: -len(".jsonl")] + ".meta.json"
                    yield Source(RUNTIME, e.path, fingerprint(e.path, meta), KIND_SUBAGENT)
            elif is_dir(e):
                yield from self._subagent_sources(e.path, depth + 1)

    def refingerprint(self, moved: set[str], known: set[str]) -> list[Source] | None:
        # a source's kind and its fingerprint's paths follow from where it is under its root's projects/ (what
        # sources() walks): <proj>/<file>.jsonl at the top, <proj>/<session>/subagents/…/agent-*.jsonl below
        tops = [str(root / "projects") + os.sep for root, _prio in self._existing_roots()]
        out: dict[str, Source] = {}
        for p in sorted(moved):
            path = p[: -len(".meta.json")] + ".jsonl" if p.endswith(".meta.json") else p
            under = [t for t in tops if path.startswith(t)]
            if path not in known or len(under) != 1:
                return None
            rest = path[len(under[0]):].split(os.sep)
            name = rest[-1]
            if len(rest) == 2 and p == path and name.endswith(".jsonl"):
                kind = KIND_AGENT if name.startswith("agent-") else KIND_SESSION
                out[path] = Source(RUNTIME, path, fingerprint(path), kind)
            elif len(rest) >= 4 and rest[2] == "subagents" and name.startswith("agent-") and name.endswith(".jsonl"):
                if path not in out:
                    out[path] = Source(RUNTIME, path, fingerprint(path, path[: -len(".jsonl")] + ".meta.json"),
                                       KIND_SUBAGENT)
            else:
                return None  # a moved file no source of this layout is fingerprinted by
        return list(out.values())

    # ---- summaries --------------------------------------------------------------------------------------

    def _priority(self, path: str) -> int:
        for prefix, prio in self._prefixes:
            if path.startswith(prefix):
                return prio
        return 0

    def refresh_live(self, sessions: list[Session]) -> None:
        live = self.live_ids()
        for s in sessions:
            s.live = s.id in live

    def live_ids(self) -> dict[str, int]:
        """Session ids a running Claude Code process holds -> its pid.

        Claude Code (2.1.x, also under `-p`) writes `<root>/sessions/<pid>.json` =
        `{pid, sessionId, cwd, startedAt, procStart, kind, …}` while it runs and deletes it on exit. A
        crashed process leaves it behind, so a session counts as live only if that pid is alive and, where
        /proc tells, is still the same process (`procStart` = field 22 of /proc/<pid>/stat, the check Claude
        itself makes against pid reuse). Older versions keep no such file: their sessions are never live.
        The map is cached briefly because the listing calls summarize() once per source.
        """
        now = time.monotonic()
        if self._live and now - self._live[0] < LIVE_TTL:
            return self._live[1]
        live: dict[str, int] = {}
        for root, _how, _prio in self._roots():
            for e in scandir(root / "sessions"):
                if not (e.name.endswith(".json") and e.name[:-5].isdigit()):
                    continue
                rec = _read_small_json(e.path)
                if not isinstance(rec, dict):
                    continue
                pid, sid = rec.get("pid"), rec.get("sessionId")
                if isinstance(sid, str) and pid_alive(pid) and _same_process(pid, rec.get("procStart")):
                    live[sid] = pid
        self._live = (now, live)
        return live

    # ---- steps ------------------------------------------------------------------------------------------


def scandir(path: str | os.PathLike[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir()
    except OSError:
        return False


def _read_small_json(path: str, cap: int = 256 * 1024) -> Any:
    try:
        with open_regular(path) as f:
            data = f.read(cap + 1)
    except OSError:
        return None
    return loads(data) if len(data) <= cap else None


def read_meta(path: str) -> dict[str, Any]:
    meta = _read_small_json(path[: -len(".jsonl")] + ".meta.json")
    return meta if isinstance(meta, dict) else {}


def parent_from_path(path: str, kind: str) -> str | None:
    if kind != KIND_SUBAGENT:
        return None
    parts = Path(path).parts
    if "subagents" in parts:
        i = len(parts) - 1 - parts[::-1].index("subagents")
        return parts[i - 1] if i >= 1 else None
    return None


def _same_process(pid: int, proc_start: Any) -> bool:
    if not isinstance(proc_start, str) or not proc_start:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            s = f.read().decode("ascii", "replace")
    except OSError:
        return True  # no /proc (macOS): trust the live pid, as Claude Code does
    fields = s[s.rfind(")") + 2:].split(" ")
    return len(fields) <= 19 or fields[19] == proc_start


