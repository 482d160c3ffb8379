"""Gemini CLI reader: `$GEMINI_CLI_HOME/.gemini` (else `~/.gemini`), read-only.

Generations (tests/realruntimes/FINDINGS-gemini.md):
- G2 (≥ 0.36, checked on 0.61): JSONL `tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id[:8]>.jsonl`. Records:
  metadata `{sessionId, projectHash, startTime, lastUpdated, kind, directories?}` (first line; a resume may
  append another), messages `{id, timestamp, type: user|gemini|info|error|warning, content, ...}` (a message
  is re-appended whole when its toolCalls or tokens change: the last copy of an id wins, in the place of
  the first), `{"$set": {...}}` metadata updates (`$set.messages` replaces the whole list) and
  `{"$rewindTo": id}` (drops that message and all after it; an unknown id drops everything).
- G1 (0.6 - 0.35): one JSON document `session-….json` `{sessionId, projectHash, startTime, lastUpdated,
  messages: [...]}`. Resuming one in G2 writes `….jsonl` beside it (same name + "l") and leaves the
  `.json`: a `.json` with such a sibling is skipped.
- Subagents: `chats/<parent session id>/<agent session id>.jsonl`, `kind: "subagent"`, `directories` set;
  the parent's `invoke_agent` tool call names the child in `agentId`.
- `<project>` is a slug (`~/.gemini/projects.json` maps path -> slug, `tmp/<slug>/.project_root` holds the
  path) since 0.2x; before, the SHA-256 hex of the project root. The CLI migrates a hash dir by copying it
  to the slug dir and leaves the old one: a hash dir whose sessions also live in the slug dir is skipped.

The session file never names its directory for a main session: `cwd` comes from `.project_root`, the
projects map or the `<session_context>` the CLI injects (first workspace directory), preferring the one
whose SHA-256 equals `projectHash`. No branch is stored. A running `gemini` leaves no trace in the store
(it appends and closes the file per record): `live` is always false.
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step, parse_time

try:  # the builtin SHA-256 (the same digest): hashlib would load OpenSSL for it (~4 ms of a patched listing)
    from _sha256 import sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.12+ names it _sha2
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,no-redef]
    except ImportError:
        from hashlib import sha256  # type: ignore[assignment]
from segue.stores.base import (
    HEAD_BYTES,
    MAX_TEXT,
    TAIL_BYTES,
    Env,
    Location,
    Reader,
    Source,
    complete_lines,
    fingerprint,
    loads,
    read_head_tail,
)
from segue.stores.text import fast_paths

RUNTIME = "gemini"
OVERRIDE = "set GEMINI_CLI_HOME (the directory that holds .gemini)"
SESSION_PREFIX = "session-"
MAX_LINE = 64 * 1024 * 1024  # a JSONL record longer than this is skipped and counted
MAX_JSON_DOC = 128 * 1024 * 1024  # a G1 document larger than this is not decoded (a problems entry)
STEP_TEXT = 16 * 1024
MAX_HINTS = 64
OUTPUT_TAIL = 400
KEEP_DECODED = 8 * 1024 * 1024  # search_steps: bytes of JSONL lines whose decoded records are kept
FAST_SUMMARY = True  # head/tail summaries; False forces the full reference read (tests compare both)

_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_ABS_PATH = re.compile(r"(?<![\w.])(/[^\s'\"`:;,()\[\]{}<>]+)")
_WORKSPACE = re.compile(r"Workspace Directories:\**[ \t]*\n[ \t]*-[ \t]*(\S[^\n]*)")
_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_SIGNAL = re.compile(r"^Signal: ", re.M)
_OUTPUT = re.compile(r"Output: (.*?)(?:\n(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): |\Z)",
                     re.S)
# Text the CLI puts into user turns that the user did not type (convertSessionToClientHistory skips the
# first two prefixes, plus slash commands and `?` help; the IDE context is added to the history as a turn).
_INJECTED = ("<session_context>", "<hook_context>", "Here is the user's editor context",
             "Here is a summary of changes in the user's editor context")
_READ_TOOLS = frozenset({"read_file", "read_many_files", "list_directory", "glob", "grep_search",
                         "search_file_content", "google_web_search", "web_fetch", "update_topic",
                         "enter_plan_mode", "exit_plan_mode", "get_internal_docs", "activate_skill"})
_SHELL_TOOLS = frozenset({"run_shell_command"})
_EDIT_TOOLS = frozenset({"write_file", "replace", "edit"})
_AGENT_TOOLS = frozenset({"invoke_agent", "delegate_to_agent"})


class GeminiReader(Reader):
    runtime = RUNTIME

    def __init__(self, env: Env, *, fast: bool | None = None) -> None:
        super().__init__(env)
        self.fast = (FAST_SUMMARY and fast_paths(env)) if fast is None else fast  # SEGUE_FAST_PATHS=0: reference

    # ------------------------------------------------------------------------------------------- places

    def gemini_dir(self) -> Path:
        home = self.env.path("GEMINI_CLI_HOME")  # replaces the home directory, .gemini stays below it
        return (home if home is not None else self.env.home) / ".gemini"

    def locations(self) -> list[Location]:
        tmp = self.gemini_dir() / "tmp"
        return [Location(str(tmp), tmp.is_dir(), OVERRIDE)]

    # ------------------------------------------------------------------------------------------- discovery

    def sources(self) -> Iterator[Source]:
        tmp = self.gemini_dir() / "tmp"
        try:
            projects = sorted(os.scandir(tmp), key=lambda e: e.name)
        except OSError:
            return
        roots = self._project_roots(projects)
        pmap_fp = fingerprint(self.gemini_dir() / "projects.json")
        migrated = {_sha256(r) for r in roots.values()}  # hash dirs the CLI copied into a slug dir
        for proj in projects:
            if not _is_dir(proj):
                continue
            chats = Path(proj.path) / "chats"
            slug_for_hash = None
            if _HEX64.match(proj.name) and proj.name in migrated:
                slug_for_hash = next((n for n, r in roots.items() if _sha256(r) == proj.name), None)
            side: dict[str, tuple[Any, ...]] = {}  # per directory: stated once, not once per session file
            project_root = os.path.join(proj.path, ".project_root")
            # paths as strings (what str(Path(...)) gives for scandir's joins): no Path built per session file
            chats_s = str(chats)
            copies = f"{tmp}/{slug_for_hash}/chats/" if slug_for_hash else ""
            for path, parent, kind in _session_files(chats_s):
                # (tmp / slug / "chats" / the path below chats, built once: every part is a plain name)
                if slug_for_hash and Path(copies + path[len(chats_s) + 1:]).exists():
                    continue  # the same file, copied by the slug migration: read the copy the CLI uses
                # cwd comes from .project_root and projects.json, a twin's verdict from its siblings (the dir)
                around = side.get(parent)
                if around is None:
                    around = side[parent] = fingerprint(parent, project_root)
                yield Source(RUNTIME, path, fingerprint(path) + around + pmap_fp, kind)

    def refingerprint(self, moved: set[str], known: set[str]) -> list[Source] | None:
        # a session file's kind and directory follow from its depth under tmp/ (<project>/chats/<file>, or
        # <project>/chats/<subagent dir>/<file>); .project_root, projects.json or a directory: a discovery
        tmp = str(self.gemini_dir() / "tmp") + os.sep
        pmap_fp: tuple[Any, ...] | None = None
        out: list[Source] = []
        for path in sorted(moved):
            rest = path[len(tmp):].split(os.sep) if path.startswith(tmp) else []
            if path not in known or len(rest) not in (3, 4) or rest[1] != "chats" or "." not in rest[-1]:
                return None
            parent = os.path.dirname(path)
            kind = ("main-" if len(rest) == 3 else "subagent-") + rest[-1].rsplit(".", 1)[1]
            if pmap_fp is None:
                pmap_fp = fingerprint(self.gemini_dir() / "projects.json")
            around = fingerprint(parent, os.path.join(tmp + rest[0], ".project_root"))
            out.append(Source(RUNTIME, path, fingerprint(path) + around + pmap_fp, kind))
        return out

    def _project_roots(self, projects: list[os.DirEntry[str]]) -> dict[str, str]:
        """slug dir name -> project root from its `.project_root` (tiny files, read once per listing)."""
        out: dict[str, str] = {}
        for proj in projects:
            if _HEX64.match(proj.name) or not _is_dir(proj):
                continue
            root = _read_small(Path(proj.path) / ".project_root")
            if root:
                out[proj.name] = root
        return out

    # ------------------------------------------------------------------------------------------- summaries

    def summarize(self, source: Source) -> list[Session]:
        path = Path(source.path)
        if path.suffix == ".json":
            facts = self._summary_json(path)
        else:
            facts = None
            if self.fast:
                facts = _summary_head_tail(path, sub=source.kind.startswith("subagent"))
            if facts is None:
                facts = _Facts()
                _replay(path, facts, ReadStats())
        if not facts.resumable_content and facts.session_id and _has_twin(path, facts.session_id):
            # `gemini --resume` writes a startup-only file named for the new minute (metadata and the
            # injected context) and then appends to the session's own file: the twin is not a session
            return []
        return [self._session(path, source.kind, facts)]

    def _summary_json(self, path: Path) -> _Facts:
        facts = _Facts()
        try:
            doc = _read_json_doc(path)
        except ValueError as e:
            facts.problems.append(f"{path.name}: {e}")
            return facts
        if not isinstance(doc, dict):
            facts.problems.append(f"{path.name}: not a session document")
            return facts
        facts.meta(doc)
        messages = _list(doc.get("messages"))
        for msg in messages:
            facts.message(msg)
        facts.hint_messages = messages  # their paths are looked at only when nothing else names the root
        return facts

    def _session(self, path: Path, kind: str, facts: _Facts) -> Session:
        sub = kind.startswith("subagent") or facts.kind == "subagent"
        sid = facts.session_id or _id_from_name(path)
        s = Session(runtime=RUNTIME, id=sid, store_path=str(path))
        s.problems.extend(facts.problems)
        if facts.session_id is None:
            s.problems.append(f"{path.name}: no sessionId record; the id is taken from the file name")
        s.first_request = _cap(facts.first_request)
        s.title = None if sub else _cap(facts.summary)  # a subagent's `summary` is its result
        s.started_at = facts.started
        s.updated_at = facts.updated if facts.updated is not None else facts.started
        if s.updated_at is None:
            s.updated_at = _mtime(path)
        s.model = facts.model
        s.cwd, how = self._cwd(path, facts, sub)
        if s.cwd is None:
            s.problems.append("the session's directory is not recorded (no .project_root, no projects.json "
                              "entry and no workspace directory in the session)")
        if sub:
            s.parent_id = path.parent.name
            s.resumable, s.resume_blocker = False, "subagent"
        elif not facts.resumable_content:
            # `gemini --resume` lists only sessions with a real prompt, answer or tool call
            s.resumable, s.resume_blocker = False, "cli_cannot_reopen"
        s.locator = {"format": path.suffix.lstrip("."), "kind": "subagent" if sub else "main",
                     "project_dir": str(path.parent.parent.parent if sub else path.parent.parent),
                     "project_hash": facts.project_hash, "cwd_from": how}
        return s

    def _cwd(self, path: Path, facts: _Facts, sub: bool) -> tuple[str | None, str | None]:
        """The project root: candidates in order, the first whose SHA-256 is the session's projectHash wins;
        without a hash match the first candidate stands (a moved store, Windows path spelling)."""
        proj = path.parent.parent.parent if sub else path.parent.parent
        cands: list[tuple[str, str]] = []
        root = self._project_root(proj)
        if root:
            cands.append((root, "project_root"))
        cands += [(p, "projects_json") for p in self._projects_map().get(proj.name, [])]
        cands += [(d, "directories") for d in facts.directories[:1]]
        if facts.workspace:
            cands.append((facts.workspace, "session_context"))
        if _HEX64.match(proj.name):
            cands += [(p, "projects_json") for p in self._projects_by_hash().get(proj.name, [])]
        want = facts.project_hash or (proj.name if _HEX64.match(proj.name) else None)
        for p, how in cands:
            if want and _sha256(p) == want:
                return p, how
        if cands:
            return cands[0]
        if want:  # G1 names the root nowhere: an ancestor of a path the tools touched, if it hashes right
            for hint in facts.hints():
                for anc in [hint, *map(str, Path(hint).parents)]:
                    if _sha256(anc) == want:
                        return anc, "tool_paths"
        return None, None

    def _project_root(self, proj: Path) -> str | None:
        """A project dir's `.project_root`, read once per reader while its size and mtime stay the same (a
        listing summarizes every session of a project with one reader)."""
        memo: dict[str, tuple[Any, str | None]] = self.__dict__.setdefault("_roots", {})
        key = str(proj)
        p = os.path.join(key, ".project_root")  # str(proj / ".project_root"), without building a Path
        fp = fingerprint(p)
        hit = memo.get(key)
        if hit is None or hit[0] != fp:
            hit = memo[key] = (fp, _read_small(Path(p)))
        return hit[1]

    def _projects_by_hash(self) -> dict[str, list[str]]:
        """SHA-256 of each `projects.json` path -> the paths, in the map's order (for hash-named dirs)."""
        pmap = self._projects_map()
        cached = self.__dict__.get("_pmap_hash")
        if cached is not None and cached[0] is pmap:
            return cached[1]
        out: dict[str, list[str]] = {}
        for ps in pmap.values():
            for p in ps:
                out.setdefault(_sha256(p), []).append(p)
        self.__dict__["_pmap_hash"] = (pmap, out)
        return out

    def _projects_map(self) -> dict[str, list[str]]:
        """slug -> paths from `projects.json` (cached per reader; a damaged map is ignored)."""
        cached = self.__dict__.get("_pmap")
        pj = self.__dict__.get("_pmap_path")
        if pj is None:  # the reader's Env is fixed: where the map lives is worked out once
            pj = self.__dict__["_pmap_path"] = str(self.gemini_dir() / "projects.json")
        fp = fingerprint(pj)
        if cached is not None and cached[0] == fp:
            return cached[1]
        out: dict[str, list[str]] = {}
        text = _read_small(Path(pj), limit=8 * 1024 * 1024)
        doc = loads(text) if text else None
        projects = doc.get("projects") if isinstance(doc, dict) else None
        if isinstance(projects, dict):
            for p, slug in projects.items():
                if isinstance(p, str) and isinstance(slug, str):
                    out.setdefault(slug, []).append(p)
        self.__dict__["_pmap"] = (fp, out)
        return out

    def refresh_live(self, sessions: list[Session]) -> None:
        for s in sessions:
            s.live = False  # the CLI leaves no live marker (FINDINGS-gemini.md)

    # ------------------------------------------------------------------------------------------- steps

    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        path = Path(session.store_path)
        try:
            if path.suffix == ".json":
                doc = _read_json_doc(path)
                stats.bytes_read += _size(path)
                msgs = iter(_list(doc.get("messages")) if isinstance(doc, dict) else [])
            else:
                msgs = _final_messages(path, stats)
            yield from _message_steps(msgs)
        except (OSError, ValueError) as e:
            stats.problems.append(f"{path.name}: {e}")

    def search_steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """A JSONL session as the search index reads it, while fast paths are on: each record decoded once
        (up to KEEP_DECODED bytes of them kept for the final order, instead of decoded again) and steps
        without what the index never holds (times, output tails). The same steps otherwise."""
        path = Path(session.store_path)
        if path.suffix == ".json" or not fast_paths(self.env):
            yield from self.steps(session, stats)
            return
        try:
            yield from _message_steps(_final_messages(path, stats, keep=KEEP_DECODED), lean=True)
        except (OSError, ValueError) as e:
            stats.problems.append(f"{path.name}: {e}")


# ---------------------------------------------------------------------------------------------------------
# Summary facts


@dataclass
class _Facts:
    session_id: str | None = None
    project_hash: str | None = None
    kind: str | None = None
    started: float | None = None
    updated: float | None = None
    first_request: str | None = None
    model: str | None = None
    workspace: str | None = None
    directories: list[str] = field(default_factory=list)
    resumable_content: bool = False
    summary: str | None = None
    hint_messages: list[Any] = field(default_factory=list)  # a G1 document's messages, for `hints`
    last_touched: str | None = None  # the last time text `touch` parsed (the CLI repeats each one)
    problems: list[str] = field(default_factory=list)

    def hints(self) -> list[str]:
        """Absolute paths from the tool calls of a G1 document's messages, in order (messages are added until
        MAX_HINTS paths are known): computed when needed, the last resort for a project root, not per document."""
        out: list[str] = []
        for msg in self.hint_messages:
            if len(out) >= MAX_HINTS:
                break
            out += _abs_paths(msg)
        return out

    def meta(self, rec: dict[str, Any]) -> None:
        if self.session_id is None and isinstance(rec.get("sessionId"), str) and rec["sessionId"]:
            self.session_id = rec["sessionId"]
        if self.project_hash is None and isinstance(rec.get("projectHash"), str):
            self.project_hash = rec["projectHash"]
        if self.kind is None and isinstance(rec.get("kind"), str):
            self.kind = rec["kind"]
        st = parse_time(rec.get("startTime"))
        if st is not None and (self.started is None or st < self.started):
            self.started = st
        self.touch(rec.get("lastUpdated"))
        if isinstance(rec.get("summary"), str) and rec["summary"].strip():
            self.summary = rec["summary"].strip()
        dirs = rec.get("directories")
        if isinstance(dirs, list) and not self.directories:
            self.directories = [d for d in dirs if isinstance(d, str) and d]

    def touch(self, value: Any) -> None:
        if type(value) is str:
            if value == self.last_touched:
                return  # the same text parses to the same time: max() with it again changes nothing
            self.last_touched = value
        t = parse_time(value)
        if t is not None and (self.updated is None or t > self.updated):
            self.updated = t

    def message(self, msg: Any) -> None:
        if not isinstance(msg, dict) or not isinstance(msg.get("id"), str):
            return
        self.touch(msg.get("timestamp"))
        kind = msg.get("type")
        if kind == "user":
            if self.workspace is None:
                self.workspace = _workspace(msg.get("content"))
            if self.first_request is None:  # once known, a later request can change nothing here
                text = user_request(msg)
                if text is not None:
                    self.resumable_content = True
                    self.first_request = text
        elif kind == "gemini":
            if isinstance(msg.get("model"), str) and msg["model"]:
                self.model = msg["model"]
            if not self.resumable_content and (_text(msg.get("content")).strip() or msg.get("toolCalls")
                                               or msg.get("thoughts")):
                self.resumable_content = True

    def record(self, rec: Any) -> None:
        """One JSONL record in file order."""
        if not isinstance(rec, dict):
            return
        if isinstance(rec.get("$set"), dict):
            upd = rec["$set"]
            self.touch(upd.get("lastUpdated"))
            if isinstance(upd.get("summary"), str) and upd["summary"].strip():
                self.summary = upd["summary"].strip()  # the CLI's session title (written after the fact)
            for m in _list(upd.get("messages")):
                self.message(m)
            if isinstance(upd.get("directories"), list) and not self.directories:
                self.meta({"directories": upd["directories"]})
        elif isinstance(rec.get("$rewindTo"), str):
            return
        elif isinstance(rec.get("id"), str):
            self.message(rec)
        elif isinstance(rec.get("sessionId"), str):
            self.meta(rec)
            for m in _list(rec.get("messages")):
                self.message(m)


def _replay(path: Path, facts: _Facts, stats: ReadStats) -> None:
    """The reference summary: every record of the file, in order."""
    try:
        _replay_lines(_lines(path, stats), facts, stats, fast=False)
    except OSError as e:
        facts.problems.append(f"{path.name}: {e.strerror or e}")
    if stats.damaged_lines:
        facts.problems.append(f"{stats.damaged_lines} damaged record(s) skipped")


def _replay_lines(lines: Iterator[bytes], facts: _Facts, stats: ReadStats, *, fast: bool) -> None:
    for raw in lines:
        if fast and _set_updated(raw, facts):
            continue
        obj = loads(raw)
        if obj is None:
            stats.damaged_lines += 1
            continue
        facts.record(obj)


# `{"$set":{"lastUpdated":"<time>"}}` exactly as the CLI writes it after every message (a third of a session's
# lines): the time holds no quote, backslash or escape, so its bytes are the decoded string.
_SET_UPDATED = re.compile(rb'\{"\$set":\{"lastUpdated":"([0-9A-Za-z:.+\-]{1,64})"\}\}')


def _set_updated(raw: bytes, facts: _Facts) -> bool:
    """Fast path: a line that is exactly a `lastUpdated` update is applied without decoding it (what
    `_Facts.record` does with its decoded object: `touch` the time). Any other line: False, decode it."""
    m = _SET_UPDATED.fullmatch(raw)
    if m is None:
        return False
    facts.touch(m.group(1).decode("ascii"))
    return True


def _summary_head_tail(path: Path, sub: bool = False) -> _Facts | None:
    """The fast summary from the first and last 32 KiB, or None when they do not hold every fact the
    reference read would find (then the caller reads the whole file). A file that fits in them is replayed
    whole from the bytes already read (the reference's records, read once). `sub`: the file is a subagent's
    by its place (`chats/<parent>/`), whose title is never shown."""
    try:
        head, tail, size = read_head_tail(path, HEAD_BYTES, TAIL_BYTES)
    except OSError:
        return None
    if not tail:
        facts = _Facts()
        stats = ReadStats()
        _replay_lines(_split_lines(head, stats), facts, stats, fast=True)
        if stats.damaged_lines:
            facts.problems.append(f"{stats.damaged_lines} damaged record(s) skipped")
        return facts
    facts = _Facts()
    lines = complete_lines(head, from_start=True)
    for raw in lines:
        if _set_updated(raw, facts):
            continue
        obj = loads(raw)
        if obj is None:
            return None
        facts.record(obj)
    if facts.session_id is None or facts.first_request is None:
        return None
    if facts.workspace is None and not (facts.kind == "subagent" and facts.directories):
        return None  # the reference read might find the <session_context> further on
    later = _Facts()
    for raw in complete_lines(tail, from_start=False):
        if _set_updated(raw, later):
            continue
        obj = loads(raw)
        if obj is None:
            return None
        later.record(obj)
    if later.model is None or later.updated is None:
        return None
    # a title may be set in the middle: only the full read knows which one is last, unless the tail sets one
    # (the last one in the file then) or the title is never shown (a subagent's `summary` is its result)
    if (later.summary is None and not sub and facts.kind != "subagent"
            and _middle_mentions(path, len(head), size - len(tail), b'"summary"')):
        return None
    # the middle may hold a later metadata line (a resume) but never an earlier start
    facts.updated = max(later.updated, facts.updated or later.updated)
    facts.model = later.model
    facts.summary = later.summary or facts.summary
    facts.resumable_content = True  # a first request was found
    return facts


def _middle_mentions(path: Path, start: int, end: int, needle: bytes) -> bool:
    """Whether the bytes between head and tail contain needle (read in chunks, never decoded). The range
    is widened by the needle's length at both ends so a needle cut by the head or tail is still found."""
    start, end = max(0, start - len(needle)), end + len(needle)
    keep = len(needle) - 1
    # One buffer for the whole scan, its first `keep` bytes the end of the previous chunk (a needle across
    # the seam is found): no new chunk object, so no fresh pages to fault in, per MiB.
    buf = bytearray(keep + 1024 * 1024)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        pos, have = start, 0
        while pos < end:
            n = f.readinto(view[have:have + min(len(buf) - have, end - pos)])
            if not n:
                break
            pos += n
            if buf.find(needle, 0, have + n) >= 0:
                return True
            tail = min(keep, have + n)
            buf[:tail] = buf[have + n - tail:have + n]
            have = tail
    return False


# ---------------------------------------------------------------------------------------------------------
# The final message list of a JSONL session, in bounded memory


def _final_messages(path: Path, stats: ReadStats, keep: int = 0) -> Iterator[dict[str, Any]]:
    """Replay the records to the CLI's final message order, keeping only (offset, index) per message id,
    then decode each message's last version again. Memory grows with the message count, not the text.
    `keep`: the decoded records of up to this many bytes of lines are kept by offset and not decoded again
    (the same bytes decode to the same object)."""
    order: dict[str, tuple[int, int]] = {}
    decoded: dict[int, Any] = {}
    kept = 0
    with open(path, "rb") as f:
        offset = 0
        for raw in f:
            at = offset
            offset += len(raw)
            stats.bytes_read += len(raw)
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE:
                stats.damaged_lines += 1
                continue
            obj = loads(raw)
            if not isinstance(obj, dict):
                if raw.endswith(b"\n"):  # a cut last line is a live writer, not damage
                    stats.damaged_lines += 1
                continue
            if kept + len(raw) <= keep:
                kept += len(raw)
                decoded[at] = obj
            if isinstance(obj.get("$rewindTo"), str):
                _rewind(order, obj["$rewindTo"])
            elif isinstance(obj.get("$set"), dict):
                msgs = obj["$set"].get("messages")
                if isinstance(msgs, list):
                    order.clear()
                    _add_list(order, msgs, at)
            elif isinstance(obj.get("id"), str):
                order[obj["id"]] = (at, -1)
            elif isinstance(obj.get("sessionId"), str) and isinstance(obj.get("messages"), list):
                _add_list(order, obj["messages"], at)
        cached: tuple[int, Any] | None = None
        for at, idx in order.values():
            if cached is None or cached[0] != at:
                if at in decoded:
                    cached = (at, decoded[at])
                else:
                    f.seek(at)
                    cached = (at, loads(f.readline()))
            obj = cached[1]
            if idx >= 0 and isinstance(obj, dict):
                holder = obj.get("$set") if isinstance(obj.get("$set"), dict) else obj
                items = holder.get("messages") if isinstance(holder, dict) else None
                obj = items[idx] if isinstance(items, list) and idx < len(items) else None
            if isinstance(obj, dict):
                yield obj
            if idx < 0:
                cached = None  # a single message line: keep nothing between messages


def _add_list(order: dict[str, tuple[int, int]], msgs: list[Any], at: int) -> None:
    for i, m in enumerate(msgs):
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            order[m["id"]] = (at, i)


def _rewind(order: dict[str, tuple[int, int]], mid: str) -> None:
    if mid not in order:
        order.clear()
        return
    keys = list(order)
    for k in keys[keys.index(mid):]:
        del order[k]


# ---------------------------------------------------------------------------------------------------------
# Steps from messages


def _message_steps(msgs: Iterator[Any], lean: bool = False) -> Iterator[Step]:
    """`lean`: without times and output tails (the search index keeps neither)."""
    pending: dict[str, dict[str, Any]] = {}  # functionCall parts without a toolCalls record, by call id
    for msg in msgs:
        if not isinstance(msg, dict):
            continue  # a G1 document's messages list may hold anything
        at = None if lean else parse_time(msg.get("timestamp"))
        kind = msg.get("type")
        if kind == "user":
            for part in _parts(msg.get("content")):
                resp = part.get("functionResponse")
                if isinstance(resp, dict) and str(resp.get("id")) in pending:
                    call = pending.pop(str(resp.get("id")))
                    yield from _call_steps({**call, "result": [part]}, at, lean)
            text = user_request(msg)
            if text is not None:
                yield Step("request", _cap(text, STEP_TEXT) or "", at=at)
        elif kind == "gemini":
            calls = [c for c in _list(msg.get("toolCalls")) if isinstance(c, dict)]
            text_parts: list[str] = []
            for part in _parts(msg.get("content")):
                if part.get("thought"):
                    continue
                fc = part.get("functionCall")
                if isinstance(fc, dict):
                    if not calls:
                        pending[str(fc.get("id"))] = {"id": fc.get("id"), "name": fc.get("name"),
                                                      "args": fc.get("args")}
                elif isinstance(part.get("text"), str):
                    text_parts.append(part["text"])
            if isinstance(msg.get("content"), str):
                text_parts.append(msg["content"])
            text = "".join(text_parts).strip()
            if text:
                yield Step("message", _cap(text, STEP_TEXT) or "", at=at)
            for call in calls:
                yield from _call_steps(call, None if lean else parse_time(call.get("timestamp")) or at, lean)
    for call in pending.values():  # calls whose results never came (an interrupted turn)
        yield from _call_steps(call, None, lean)


def _call_steps(call: dict[str, Any], at: float | None, lean: bool = False) -> Iterator[Step]:
    name = call.get("name") if isinstance(call.get("name"), str) else ""
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    if name in _READ_TOOLS:
        return
    if name in _SHELL_TOOLS:
        out = _result_text(call.get("result"))
        yield Step("command", _cap(_str(args.get("command")), STEP_TEXT) or "", at=at,
                   exit_code=shell_exit_code(call.get("status"), out), output=None if lean else _output_tail(out))
    elif name in _EDIT_TOOLS:
        added, removed = _diff_counts(call.get("resultDisplay"))
        path = _str(args.get("file_path")) or _str(args.get("path"))
        if path and not path.startswith("/"):  # G1 accepted relative paths; its result names the file
            path = next((p.rstrip(".") for p in _ABS_PATH.findall(_result_text(call.get("result")) or "")
                         if p.rstrip(".").endswith("/" + path.lstrip("./"))), path)
        yield Step("edit", at=at, path=path or None, added=added, removed=removed)
    elif name in _AGENT_TOOLS:
        ref = call.get("agentId")
        yield Step("subagent", _cap(_str(args.get("prompt")), STEP_TEXT) or "", at=at,
                   ref=ref if isinstance(ref, str) and ref else None)
    elif name == "complete_task":  # a subagent's final answer
        result = args.get("result")
        text = result.get("response") if isinstance(result, dict) else result
        text = text if isinstance(text, str) else json.dumps(result, ensure_ascii=False) if result else ""
        if text.strip():
            yield Step("message", _cap(text, STEP_TEXT) or "", at=at)
    elif name:
        brief = json.dumps(args, ensure_ascii=False, sort_keys=True)[:200] if args else ""
        yield Step("tool", f"{name}: {brief}" if brief else name, at=at)


def _line_search(rx: re.Pattern[str], literal: str, text: str) -> re.Match[str] | None:
    """`rx.search(text)` for a multi-line pattern `^literal…`: tried only where `literal` starts a line
    (a `^` search walks every character of a long output in Python's regex engine; `str.find` does not)."""
    i = text.find(literal)
    while i >= 0:
        if i == 0 or text[i - 1] == "\n":
            m = rx.match(text, i)
            if m:
                return m
        i = text.find(literal, i + 1)
    return None


def shell_exit_code(status: Any, output: str | None) -> int | None:
    """`run_shell_command` reports a non-zero exit as an `Exit Code: N` line; a successful run with no such
    line exited 0. Errors (refused, cancelled), signals and missing results are unknown."""
    if output is None:
        return None
    m = _line_search(_EXIT, "Exit Code: ", output)
    if m:
        return int(m.group(1))
    if _line_search(_SIGNAL, "Signal: ", output) or status not in ("success", None):
        return None
    return 0 if "Output:" in output else None


def _abs_paths(msg: Any) -> list[str]:
    """Absolute paths in a message's tool-call arguments and results (hints for a G1 project root)."""
    out: list[str] = []
    if not isinstance(msg, dict):
        return out
    for call in _list(msg.get("toolCalls")):
        if not isinstance(call, dict):
            continue
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        for key in ("file_path", "absolute_path", "dir_path", "path", "directory"):
            v = args.get(key)
            if isinstance(v, str) and v.startswith("/"):
                out.append(v.rstrip("/") or "/")
        text = _result_text(call.get("result")) or ""
        out += [p.rstrip(".") for p in _ABS_PATH.findall(text[:4096])]
    return out[:MAX_HINTS]


def _result_text(result: Any) -> str | None:
    """The text of a tool result (`[{functionResponse: {response: {output|error}}}]` or a string)."""
    if isinstance(result, str):
        return result
    for part in _list(result):
        resp = part.get("functionResponse") if isinstance(part, dict) else None
        body = resp.get("response") if isinstance(resp, dict) else None
        if isinstance(body, dict):
            for key in ("output", "error"):
                if isinstance(body.get(key), str):
                    return body[key] if key == "output" else f"Error: {body[key]}"
    return None


_OUTPUT_ENDS = tuple(f"\n{k}: " for k in ("Error", "Exit Code", "Signal", "Background PIDs", "Process Group PGID"))


def _output_section(out: str) -> str | None:
    """`_OUTPUT.search(out).group(1)` (None for no match) by `str.find`: the first `Output: ` always matches
    (its end-of-text branch ends it at the latest), and the lazy group ends at the earliest terminator. The regex
    tries its alternation at every character of a long output."""
    i = out.find("Output: ")
    if i < 0:
        return None
    start = i + len("Output: ")
    ends = [e for e in (out.find(t, start) for t in _OUTPUT_ENDS) if e >= 0]
    return out[start:min(ends)] if ends else out[start:]


def _output_tail(out: str | None) -> str | None:
    if not out:
        return None
    section = _output_section(out)
    text = (section if section is not None else out).strip()
    return text[-OUTPUT_TAIL:] if text else None


def _diff_counts(display: Any) -> tuple[int | None, int | None]:
    stat_ = display.get("diffStat") if isinstance(display, dict) else None
    if not isinstance(stat_, dict):
        return None, None
    a, r = stat_.get("model_added_lines"), stat_.get("model_removed_lines")
    ok = [v if isinstance(v, int) and not isinstance(v, bool) else None for v in (a, r)]
    return ok[0], ok[1]


def user_request(msg: dict[str, Any]) -> str | None:
    """The user's own words in a user message, or None for injected context, slash commands, `?` help and
    tool results. `displayContent` (what was typed, before `@file` expansion) wins over `content`."""
    value = msg.get("displayContent")
    if not (isinstance(value, str) or _parts(value)):
        value = msg.get("content")
    if isinstance(value, str):
        texts = [value]
    else:
        parts = _parts(value)
        if any("functionResponse" in p for p in parts):
            return None
        texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    text = "".join(t for t in texts if not t.lstrip().startswith(_INJECTED)).strip()
    if not text or text.startswith(("/", "?")):
        return None
    return text


# ---------------------------------------------------------------------------------------------------------
# Small helpers


def _session_files(chats: str) -> Iterator[tuple[str, str, str]]:
    """(path, its directory, kind) of the main session files and subagent files under one `chats/` dir (sorted,
    `.json` shadowed by `.jsonl`)."""
    try:
        entries = sorted(os.scandir(chats), key=lambda e: e.name)
    except OSError:
        return
    names = {e.name for e in entries}
    for e in entries:
        if _is_dir(e):
            try:
                subs = sorted(os.scandir(e.path), key=lambda x: x.name)
            except OSError:
                continue
            sub_names = {x.name for x in subs}
            for x in subs:
                if _is_file(x) and _session_name(x.name, sub_names, prefix=False):
                    yield x.path, e.path, "subagent-" + x.name.rsplit(".", 1)[1]
        elif _is_file(e) and _session_name(e.name, names, prefix=True):
            yield e.path, chats, "main-" + e.name.rsplit(".", 1)[1]


def _has_twin(path: Path, sid: str) -> bool:
    """Another file in the same chats dir for the same session id (checked by its first line)."""
    suffix = "-" + sid[:8] + ".json"
    try:
        names = [n for n in os.listdir(path.parent) if n != path.name and n.startswith(SESSION_PREFIX)
                 and (n.endswith(suffix) or n.endswith(suffix + "l"))]
    except OSError:
        return False
    for n in names:
        try:
            with open(path.parent / n, "rb") as f:
                first = loads(f.readline(HEAD_BYTES))
        except OSError:
            continue
        if isinstance(first, dict) and first.get("sessionId") == sid:
            return True
    return False


def _session_name(name: str, siblings: set[str], *, prefix: bool) -> bool:
    if prefix and not name.startswith(SESSION_PREFIX):
        return False
    if name.endswith(".jsonl"):
        return True
    return name.endswith(".json") and name + "l" not in siblings  # resumed into the .jsonl beside it


WHOLE_READ = 4 * 1024 * 1024  # a file up to this size is read in one call and split in memory


def _lines(path: Path, stats: ReadStats) -> Iterator[bytes]:
    """The file's non-blank lines (the last one only when it decodes: a live writer may be cutting it). A small
    file is read whole and split at newlines, exactly the lines iterating the file gives (without their
    newline, which no decoder needs; `bytes_read` counts it)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size <= WHOLE_READ:
            yield from _split_lines(f.read(), stats)
            return
        for raw in f:
            stats.bytes_read += len(raw)
            if not raw.strip():
                continue
            if len(raw) > MAX_LINE:
                stats.damaged_lines += 1
                continue
            if not raw.endswith(b"\n") and loads(raw) is None:
                return  # a cut last line: a live writer
            yield raw


def _split_lines(data: bytes, stats: ReadStats) -> Iterator[bytes]:
    stats.bytes_read += len(data)
    pos, n = 0, len(data)
    while pos < n:
        nl = data.find(b"\n", pos)
        if nl < 0:  # a last line without a newline: maybe still being written
            raw = data[pos:]
            if not raw.strip():
                return
            if len(raw) > MAX_LINE:
                stats.damaged_lines += 1
            elif loads(raw) is not None:
                yield raw
            return
        raw = data[pos:nl]
        pos = nl + 1
        if len(raw) + 1 > MAX_LINE:
            if raw.strip():
                stats.damaged_lines += 1
            continue
        if raw.strip():
            yield raw


def _read_json_doc(path: Path) -> Any:
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        if st.st_size > MAX_JSON_DOC:
            raise ValueError(f"{st.st_size} bytes is over the {MAX_JSON_DOC}-byte cap for one session document")
        obj = loads(f.read())
    if obj is None:
        raise ValueError("not valid JSON (damaged or cut)")
    return obj


def _read_small(path: Path, limit: int = 64 * 1024) -> str | None:
    try:
        with open(path, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            data = f.read(limit + 1)
    except OSError:
        return None
    if len(data) > limit:
        return None
    text = data.decode("utf-8", "replace").strip()
    return text or None


def _workspace(content: Any) -> str | None:
    for p in _parts(content):
        t = p.get("text")
        if isinstance(t, str) and t.lstrip().startswith("<session_context>"):
            m = _WORKSPACE.search(t)
            if m:
                return m.group(1).strip()
    return None


def _parts(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value]
    if isinstance(value, list):
        return [p if isinstance(p, dict) else {"text": p} for p in value if isinstance(p, (dict, str))]
    return []


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return "".join(p["text"] for p in _parts(value) if isinstance(p.get("text"), str))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _cap(text: str | None, limit: int = MAX_TEXT) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[:limit] + "…"


@functools.lru_cache(maxsize=4096)
def _sha256(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _id_from_name(path: Path) -> str:
    stem = path.name.rsplit(".", 1)[0]
    return stem.rsplit("-", 1)[-1] if stem.startswith(SESSION_PREFIX) else stem


def _is_dir(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file(e: os.DirEntry[str]) -> bool:
    try:
        return e.is_file(follow_symlinks=False)
    except OSError:
        return False


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


__all__ = ["GeminiReader", "shell_exit_code", "user_request"]
