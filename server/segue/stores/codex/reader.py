"""Codex CLI reader: where the store is, discovery, names, liveness, summaries and steps."""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step, parse_time
from segue.stores.base import (
    Continued,
    Location,
    Reader,
    Source,
    fingerprint,
    loads,
    read_head_tail,
)
from segue.stores.codex.discovery import REVIEW_SCAN_MAX, _review_gap, _walk, open_rollouts
from segue.stores.codex.records import ZstdMissing, _lines, iter_raw_lines, open_rollout, step_lines
from segue.stores.codex.steps import StepBuilder
from segue.stores.codex.summary import (
    _all_lines,
    _Facts,
    _first_line,
    _scan_tail,
    _subagent_parent,
    _Tail,
    _zst_head_tail,
    uuid_from_name,
)
from segue.stores.codex.text import DEEP_LIMIT, OVERRIDE, RUNTIME, _cap, _str
from segue.stores.locks import held_inodes
from segue.stores.text import fast_paths, open_regular

_INDEX_RE = re.compile(rb'\{"id":"([0-9a-fA-F-]{36})","thread_name":("(?:[^"\\]|\\.)*")')




class CodexReader(Reader):
    """Codex CLI sessions.

    Live: the rollouts carry no pid or running marker, and "no task_complete yet" fits a crash as well as
    a running turn. Codex itself holds `thread-writer-locks/<thread id>.lock` locked while a process
    writes the thread (see `is_live`), which is read by default (one directory listing and one read of
    /proc/locks per second). `probe_live=True` adds the older check of /proc/*/fd for a process holding
    the rollout open (walks every process's fds, hence only on request)."""

    runtime = RUNTIME

    def __init__(self, env: Any, *, probe_live: bool = False) -> None:
        super().__init__(env)
        self.probe_live = probe_live
        self.fast = fast_paths(env)  # SEGUE_FAST_PATHS=0: the reference decode only
        self._names: dict[str, str] = {}
        self._names_fp: tuple[Any, ...] | None = None
        self._names_checked = -1.0
        self._root = env.path("CODEX_HOME") or (env.home / ".codex")
        self._live: set[str] | None = None
        self._locks: tuple[dict[str, int], set[int]] | None = None
        self._locks_at = -10.0
        self._live_at = 0.0

    # -- where

    @property
    def root(self) -> Path:
        return self._root

    def _dirs(self) -> list[tuple[Path, bool]]:
        return [(self.root / "sessions", False), (self.root / "archived_sessions", True)]

    def locations(self) -> list[Location]:
        out = [Location(str(d), d.is_dir(), OVERRIDE) for d, _ in self._dirs()]
        idx = self.root / "session_index.jsonl"
        out.append(Location(str(idx), idx.is_file(), OVERRIDE))
        return out

    # -- discovery

    def sources(self) -> Iterator[Source]:
        # Titles come from session_index.jsonl, so a rename there must re-summarize: its fingerprint is
        # part of every source's (renames are rare; the cost is one re-read of heads and tails).
        index_fp = fingerprint(self.root / "session_index.jsonl")
        for top, archived in self._dirs():
            for path in _walk(str(top)):
                kind = ("archived-" if archived else "") + ("rollout-zst" if path.endswith(".zst") else "rollout")
                yield Source(RUNTIME, path, fingerprint(path) + index_fp, kind)

    def refingerprint(self, moved: set[str], known: set[str]) -> list[Source] | None:
        # each rollout's fingerprint is its own stat and the title index's (a moved index: every source moves,
        # left to a discovery); its kind follows from its top directory and its name
        tops = [(str(top) + os.sep, archived) for top, archived in self._dirs()]
        out: list[Source] = []
        index_fp: tuple[Any, ...] | None = None
        for path in sorted(moved):
            under = [archived for top, archived in tops if path.startswith(top)]
            if path not in known or len(under) != 1:
                return None
            if index_fp is None:
                index_fp = fingerprint(self.root / "session_index.jsonl")
            kind = ("archived-" if under[0] else "") + ("rollout-zst" if path.endswith(".zst") else "rollout")
            out.append(Source(RUNTIME, path, fingerprint(path) + index_fp, kind))
        return out

    # -- names

    def names(self) -> dict[str, str]:
        """`session_index.jsonl` names: the last entry per id wins (an empty name clears it). Parsed once
        per change of the file."""
        now = time.monotonic()
        if now - self._names_checked < 0.5:  # one stat per listing, not one per session
            return self._names
        self._names_checked = now
        path = self.root / "session_index.jsonl"
        fp = fingerprint(path)
        if fp == self._names_fp:
            return self._names
        names: dict[str, str] = {}
        try:
            with open_regular(str(path), 256 * 1024) as f:
                for raw, whole in iter_raw_lines(f):
                    if not whole or b"thread_name" not in raw:
                        continue
                    m = _INDEX_RE.match(raw)  # Codex's own field order: no full decode per line
                    obj = {"id": m.group(1).decode(), "thread_name": loads(m.group(2))} if m else loads(raw)
                    if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
                        continue
                    name = obj.get("thread_name")
                    if isinstance(name, str) and name.strip():
                        names[obj["id"].lower()] = _cap(name.strip())
                    else:
                        names.pop(obj["id"].lower(), None)
        except OSError:
            names = {}
        self._names, self._names_fp = names, fp
        return names

    # -- live

    def live_paths(self) -> set[str]:
        """Rollouts some process holds open right now (cached for two seconds)."""
        now = time.monotonic()
        if self._live is None or now - self._live_at > 2.0:
            prefixes: tuple[str, ...] = ()
            for d, _ in self._dirs():
                prefixes += (str(d) + os.sep, os.path.realpath(d) + os.sep)
            self._live, self._live_at = open_rollouts(prefixes), now
        return self._live

    # -- summaries

    def summarize(self, source: Source) -> list[Session]:
        path = source.path
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path}: not a regular file")
        archived = source.kind.startswith("archived") or f"{os.sep}archived_sessions{os.sep}" in path
        compressed = path.endswith(".zst")
        name = os.path.basename(path)
        sess = Session(runtime=RUNTIME, id=uuid_from_name(name) or name.split(".")[0], store_path=path,
                       updated_at=st.st_mtime)
        # sessions/ beats archived_sessions/, a plain file beats its .zst
        sess.locator = {"path": path, "priority": (0 if archived else 2) + (0 if compressed else 1),
                        "compressed": compressed, "archived": archived}
        try:
            facts, tail, deep = self._read(path, compressed)
        except ZstdMissing as e:
            sess.problems.append(str(e))
            return [sess]
        except Exception as e:
            if not compressed:
                raise
            # zstandard raises its own ZstdError on a damaged frame: keep the session, say why
            sess.problems.append(f"compressed rollout could not be read: {e}")
            return [sess]
        self._fill(sess, facts, tail, deep, st.st_size)
        if sess.locator.get("review") and sess.parent_id is None and sess.started_at is not None:
            sess.parent_id = self._review_parent(path, sess.started_at)
        sess.live = self.is_live(sess.id) or (self.probe_live and path in self.live_paths())
        return [sess]

    def _review_parent(self, child: str, at: float) -> str | None:
        """The thread that entered review mode at `at` (Codex 0.77 review subagents record no parent):
        its rollout was written at or after `at` and holds an `entered_review_mode` event within a second
        of it. Reads only rollouts modified since, and only the lines holding that event."""
        best: tuple[float, str] | None = None
        for top, _ in self._dirs():
            for path in _walk(str(top)):
                if path == child or path.endswith(".zst"):
                    continue
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                if st.st_mtime < at - 1 or st.st_size > REVIEW_SCAN_MAX:
                    continue
                gap = _review_gap(path, at)
                sid = uuid_from_name(os.path.basename(path))
                if gap is not None and sid and (best is None or gap < best[0]):
                    best = (gap, sid)
        return best[1] if best else None

    def refresh_live(self, sessions: list[Session]) -> None:
        # cached summaries go stale when a process exits without touching the rollout
        for s in sessions:
            s.live = self.is_live(s.id) or (self.probe_live and s.store_path in self.live_paths())

    def is_live(self, session_id: str) -> bool:
        """Codex (0.171) holds `thread-writer-locks/<thread id>.lock` locked while a process writes the
        thread; a clean exit deletes the file and a killed process leaves it unlocked. So live = the
        file exists and /proc/locks shows a lock on its inode. Without /proc/locks: unknown, False."""
        locks = self._lock_state()
        if not locks:
            return False
        inode = locks[0].get(session_id.lower())
        return inode is not None and inode in locks[1]

    def _lock_state(self) -> tuple[dict[str, int], set[int]] | None:
        """(thread id -> lock file inode, locked inodes), read at most once a second."""
        now = time.monotonic()
        if now - self._locks_at < 1.0:
            return self._locks
        self._locks_at = now
        self._locks = None
        files: dict[str, int] = {}
        try:
            with os.scandir(self.root / "thread-writer-locks") as it:
                for e in it:
                    if e.name.endswith(".lock") and _UUID_ONLY_RE.match(e.name[:-5]):
                        try:
                            files[e.name[:-5].lower()] = e.inode()
                        except OSError:
                            continue
        except OSError:
            return None
        if files:
            held = held_inodes()
            if held is not None:
                self._locks = (files, held)
        return self._locks

    def _read(self, path: str, compressed: bool) -> tuple[_Facts, _Tail, bool]:
        facts = _Facts(self.fast)
        if compressed:
            head, tail_bytes = _zst_head_tail(path)
        else:
            head, tail_bytes, _ = read_head_tail(path)
        whole = not tail_bytes  # the head holds the whole file
        done = False
        first = True
        for raw in _all_lines(head) if whole else _lines(head):
            if facts.line(raw, first):
                done = True
                break
            first = False
        deep = False
        if not done and not whole:
            deep = True
            consumed = head.rfind(b"\n") + 1  # the deep scan goes on after the head's last whole line
            self._deep_scan(path, facts, consumed)
        tail = _scan_tail(head if whole else tail_bytes, whole, self.fast)
        return facts, tail, deep

    @staticmethod
    def _deep_scan(path: str, facts: _Facts, consumed: int) -> None:
        """The first request lies past the head (long injected context): read on, up to DEEP_LIMIT."""
        with open_rollout(path) as f:
            if consumed:
                f.read(consumed)
            read = consumed
            first = consumed == 0
            for raw, whole in iter_raw_lines(f):
                read += len(raw)
                if whole and facts.line(raw, first):
                    return
                first = False
                if read > DEEP_LIMIT:
                    facts.capped = True
                    return

    def _fill(self, sess: Session, facts: _Facts, tail: _Tail, deep: bool, size: int) -> None:
        if deep:
            sess.locator["read_deep"] = True
        meta = facts.meta
        if meta is None:
            sess.problems.append("no session_meta record (id from the file name)" if size else "empty rollout")
            # the CLI cannot load a rollout whose first record is not its session_meta
            sess.resumable, sess.resume_blocker = False, "cli_cannot_reopen"
        else:
            sess.id = _str(meta.get("id")) or sess.id
            git = meta.get("git")
            sess.branch = _str(git.get("branch")) if isinstance(git, dict) else None
            sess.started_at = parse_time(meta.get("timestamp")) or parse_time(facts.meta_ts)
            sess.cwd = _str(meta.get("cwd"))
            sub, sess.parent_id = _subagent_parent(meta)
            if sub:
                sess.resumable, sess.resume_blocker = False, "subagent"
                src = meta.get("source")
                if sess.parent_id is None and isinstance(src, dict) and src.get("subagent") == "review":
                    sess.locator["review"] = True
            elif facts.bare:
                # The current CLI reopens a rollout only when its first line is a wrapped session_meta
                # (codex-rs list.rs read_session_meta_line); X1 files were resumed by path before 0.39.
                sess.resumable, sess.resume_blocker = False, "cli_cannot_reopen"
            sess.locator["format"] = "bare" if facts.bare else "wrapped"
            for key in ("forked_from_id", "cli_version", "originator"):
                if _str(meta.get(key)):
                    sess.locator[key] = meta[key]
        if facts.request is None or not sess.cwd:
            facts.user_fallback()
        if not sess.cwd:
            # X1 keeps the cwd only in <environment_context>; the first turn_context is the last resort
            tc = facts.turn(facts.first_tc)
            sess.cwd = facts.env_cwd or (_str(tc.get("cwd")) if tc else None)
        sess.started_at = sess.started_at or parse_time(facts.first_ts)
        request = (facts.item_request if facts.bare else facts.request) or facts.item_request
        sess.first_request = _cap(request) if request else None
        if request is None and facts.capped:
            sess.problems.append(f"first request not found in the first {DEEP_LIMIT >> 20} MiB")
        sess.model = facts.model(tail)
        last = parse_time(tail.last_ts)
        if last is not None and not facts.bare:
            sess.updated_at = last  # else the file mtime: bare records carry no timestamps
        sess.title = self.names().get(sess.id.lower()) or _first_line(sess.first_request)
        if facts.damaged:
            sess.problems.append(f"{facts.damaged} damaged lines skipped")

    # -- steps

    def exists(self, session: Session) -> bool:
        return self._resolve(session) is not None

    def _resolve(self, session: Session) -> str | None:
        """The rollout's current path: Codex may switch a rollout between `.jsonl` and `.jsonl.zst`."""
        p = session.locator.get("path") or session.store_path
        plain = p[:-4] if p.endswith(".zst") else p
        for cand in (plain, plain + ".zst"):
            if os.path.isfile(cand):
                return cand
        return None

    def steps(self, session: Session, stats: ReadStats, lean: bool = False, recent: int | None = None
              ) -> Iterator[Step]:
        path = self._resolve(session)
        if path is None:
            stats.problems.append(f"{session.store_path}: rollout no longer exists")
            return
        try:
            f = open_rollout(path)
        except ZstdMissing as e:
            stats.problems.append(str(e))
            return
        b = StepBuilder(session.cwd, fast=self.fast, lean=lean, recent=recent)
        with f:
            try:
                yield from step_lines(f, stats, b.feed_raw)
            except Exception as e:  # zstandard.ZstdError: a corrupt frame mid-stream
                if not path.endswith(".zst"):
                    raise
                stats.problems.append(f"rollout could not be read to the end: {e}")
        yield from b.finish(stats)


    def brief_steps(self, session: Session, stats: ReadStats, recent: int) -> Iterator[Step]:
        """While fast paths are on, command items' outputs are decoded for the last `recent` steps only, and a
        big plain rollout is read in two processes (`halves`: the same steps as one pass)."""
        if not self.fast:
            return self.steps(session, stats)
        path = self._resolve(session)
        if path is not None and not path.endswith(".zst"):
            from segue.stores.codex import halves

            two = halves.steps(path, session.cwd, stats, recent)
            if two is not None:
                return two
        return self.steps(session, stats, recent=recent)

    def search_steps_from(self, session: Session, stats: ReadStats, mark: bytes | None) -> Continued | None:
        """`search_steps` on from the last quiet point of an earlier read (segue.stores.codex.resume); plain
        rollouts only."""
        from segue.stores import resume_mark
        from segue.stores.codex import resume

        if not (self.fast and resume_mark.enabled(self.env.environ)):
            return None
        path = self._resolve(session)
        if path is None or path.endswith(".zst"):
            return None  # (search_steps says what is missing, or decompresses)
        try:
            f = open_rollout(path)
        except (OSError, ZstdMissing):
            return None
        b = StepBuilder(session.cwd, fast=True, lean=True)
        return resume_mark.owning(f, lambda f: resume.read(f, b, stats, mark))

    def search_steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """While fast paths are on, the steps without times and output tails (the index keeps neither)."""
        return self.steps(session, stats, lean=self.fast)


_UUID_ONLY_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
