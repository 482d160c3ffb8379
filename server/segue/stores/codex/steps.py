"""Codex CLI: turning records, in file order, into brief Steps."""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any, cast

from segue.model import ReadStats, Step, parse_time
from segue.stores.base import (
    loads,
)
from segue.stores.codex.fast import (
    _BARE_OUTPUT_RE,
    _CALL_ID_AT_RE,
    _DATA_URL_RE,
    _ENVELOPE_RE,
    _EXEC_END_KEYS,
    _ITEM_AT_RE,
    _ROLE_AT_RE,
    _SKIP,
    _SKIP_PREFIX,
    _USED_EVENTS,
    _USED_RESPONSE,
    _USED_TURN_ITEMS,
    CUT_MIN,
    LaterOutput,
    _alone,
    _cut_record,
    _dig,
    _ends_kept,
    _fast_output,
    _skip,
    command_item_later,
)
from segue.stores.codex.records import MAX_LINE, _slim, decode_records, loads_line, normalize
from segue.stores.codex.text import (
    _SHELL_CMD_RE,
    _SHELL_FRAGMENT,
    _abs,
    _cap,
    _content_texts,
    _is_fragment,
    _output_tail,
    _str,
    changes_map,
    command_text,
    event_request,
    exit_code_from_output,
    item_request,
    output_text,
    patch_changes,
    shell_writes,
    user_item_request,
)
from segue.stores.text import STEP_TEXT

_EXEC_TOOLS = {"exec_command", "shell", "shell_command", "container.exec", "local_shell", "unified_exec"}
_PATCH_TOOLS = {"apply_patch"}
_SPAWN_TOOLS = {"spawn_agent"}
_QUIET_TOOLS = {"write_stdin", "wait_agent", "wait", "close_agent", "resume_agent", "view_image",
                "read_file", "list_dir", "grep_files", "list_mcp_resources", "read_mcp_resource"}
_CODE_MODE_TOOLS = {"exec"}  # code mode (0.154): one JavaScript cell that calls the other tools


_CALL_TYPES = ("function_call", "custom_tool_call", "local_shell_call")  # response items that only open a call
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


class _Call:
    """A tool call waiting for its output (exit code, child id, patch result)."""

    __slots__ = ("at", "cwd", "kind", "mark", "output", "text", "writes")

    def __init__(self, kind: str, text: str, at: float | None, cwd: str | None = None) -> None:
        self.kind = kind  # command | patch | spawn | tool | stdin
        self.text = text
        self.at = at
        self.cwd = cwd
        self.output: str | None = None
        self.writes: list[tuple[str, int | None, int | None]] = []
        self.mark: int | None = None  # steps emitted when a code-mode cell began


class StepBuilder:
    """Turns records, in file order, into Steps.

    Calls wait for their outputs (exit codes, child ids) and are settled at the latest at the turn's end,
    so what is held stays within one turn. Response-item requests and messages are held until it is clear
    whether the file records them as UI events (which then win); bare X1 files have no events.

    `recent`: the consumer reads a command's output only on the last `recent` steps, and only once the
    iteration has ended (a brief). Command items' outputs are then left undecoded in their lines and
    decoded in `finish` for the last `recent` such steps only; every other field is as without it."""

    def __init__(self, cwd: str | None, *, fast: bool = True, lean: bool = False, recent: int | None = None
                 ) -> None:
        self.cwd = cwd
        self.lean = lean  # the search index's read: no times, no output tails (it keeps neither)
        # (step, its output undecoded, the output to show when that decodes to nothing) of the last steps
        self.later: deque[tuple[Step, LaterOutput, str | None]] | None = (
            deque(maxlen=recent) if fast and recent is not None and not lean else None)
        self.bare = False
        self.events_form = False
        self.held: list[Step] = []
        self.pending: dict[str, _Call] = {}
        self.running: dict[int, str] = {}  # unified exec session id -> call id of the command
        self.done: set[str] = set()
        self.prev: Step | None = None
        self.last_message: str | None = None
        self.big_skipped = 0
        self._ts: Any = None
        self._at: float | None = None
        self.fast = fast
        self.lines = 0  # non-blank lines seen
        self.known = 0  # records recognised (decoded, or skipped on a positive match of their type)
        self.bad_args = 0  # function calls whose `arguments` string is not JSON
        self.emitted = 0  # non-message steps so far
        self.later_added = 0  # entries appended to `later` so far

    # -- raw lines

    def feed_raw(self, raw: bytes, whole: bool, stats: ReadStats) -> Iterable[Step]:
        """The steps one line gives. Not a generator itself: most lines give none, and a line that gives
        none costs no generator (the caller's `yield from ()` is free); the work is done when called."""
        if not whole or not raw.isspace():  # readline never returns b"": isspace() is "blank", without a copy
            self.lines += 1
        if whole and not self.fast:
            return self._decode_whole(raw, stats)
        m = _ENVELOPE_RE.match(raw) if whole else None
        plan = None
        if m is not None:  # Codex's own compact envelope: most records are decided from their bytes
            plan = self._plan(raw, m)
        elif whole and (b := _BARE_OUTPUT_RE.match(raw)) is not None:
            plan = self._plan_output(raw, b.end(), bare=True)
        if plan is _SKIP:
            self.known += 1
            return ()
        if plan is not None:
            kind, payload, ts = normalize(plan)
            return self.feed(kind, payload, ts)
        if m is None:
            head = raw[:320]
            if any(s in head for s in _SKIP_PREFIX):
                self.known += 1
                return ()
        if not whole:  # only the first 64 KiB of the line are here
            fast = _fast_output(raw)
            if fast is not None:  # a huge tool output: its call id and exit-code header
                self.known += 1
                return self._output(fast, None)
            if not self.big_skipped:
                stats.problems.append(f"records over {MAX_LINE >> 20} MiB skipped")
            self.big_skipped += 1
            return ()
        if len(raw) > 256 * 1024 and b'"data:' in raw:
            raw = _DATA_URL_RE.sub(b'"data:"', raw)  # inline base64 images
        if raw.find(b'"turn_context"', 0, 320) >= 0:
            raw = _slim(raw)
        elif m is not None:
            # A compact envelope that decodes to one record is what `decode_records` + `normalize` would
            # give (the envelope has a string type and an object payload); anything else goes through them.
            obj = loads_line(raw)
            if isinstance(obj, dict):
                kind, payload = obj.get("type"), obj.get("payload")
                if isinstance(kind, str) and isinstance(payload, dict):
                    return self.feed(kind, payload, obj.get("timestamp"))
                return self._feed_records([obj], 0, stats)
        return self._decode_whole(raw, stats)

    def _decode_whole(self, raw: bytes, stats: ReadStats) -> Iterator[Step]:
        """The reference path: decode the line and feed every record it holds."""
        recs, bad = decode_records(raw)
        return self._feed_records(recs, bad, stats)

    def _feed_records(self, recs: list[dict[str, Any]], bad: int, stats: ReadStats) -> Iterator[Step]:
        stats.damaged_lines += bad
        for obj in recs:
            kind, payload, ts = normalize(obj)
            yield from self.feed(kind, payload, ts)

    def _plan(self, raw: bytes, m: re.Match[bytes]) -> Any:
        """Decide an envelope line from its bytes: `_SKIP` (nothing a brief uses), a record decoded from a
        copy with the middle of its big output strings cut out, or None (decode the line whole)."""
        kind, sub = m.group(1), m.group(2)
        if kind == b"turn_context" or sub is None:
            return None
        at = m.end()
        if kind == b"response_item":
            if sub not in _USED_RESPONSE:
                return _skip(raw, at)
            if sub == b"message":
                role = _ROLE_AT_RE.match(raw, at)
                if role is not None and (role.group(1) in (b"developer", b"system") or (
                        role.group(1) == b"assistant" and self.events_form)):
                    return _skip(raw, at)  # instructions, or the response-item copy of an event message
            elif sub in (b"function_call_output", b"custom_tool_call_output"):
                return self._plan_output(raw, at)
            return None
        if kind == b"event_msg":
            if sub not in _USED_EVENTS:
                return _skip(raw, at)
            if sub == b"item_completed":
                it = _ITEM_AT_RE.match(raw, at)
                if it is None:
                    return None
                if it.group(1) not in _USED_TURN_ITEMS:
                    return _skip(raw, at)
                if it.group(1) == b"CommandExecution":
                    # the output is not needed now, if ever; a line held for later stays short (memory)
                    if self.lean or (self.later is not None and len(raw) < CUT_MIN):
                        later = command_item_later(raw, at)
                        if later is not None:
                            return later
                    if len(raw) >= CUT_MIN:
                        obj = _cut_record(raw, at, (b'"aggregated_output":"',), 0)
                        item = _dig(obj, "item")
                        ok = item is not None and _ends_kept(item.get("aggregated_output"), False)
                        return obj if ok else None
            elif sub == b"exec_command_end" and len(raw) >= CUT_MIN:
                obj = _cut_record(raw, at, _EXEC_END_KEYS, 0)
                p = _dig(obj)
                if p is not None and _ends_kept(_str(p.get("aggregated_output")) or p.get("stdout"), False):
                    return obj
            return None
        return _skip(raw, at)  # session_meta, compacted, world_state, token records, …

    def _plan_output(self, raw: bytes, at: int, bare: bool = False) -> Any:
        """A tool output (wrapped, or a bare X1 item): skipped unless its call waits for it; a command's
        output is read from its ends."""
        m = _CALL_ID_AT_RE.match(raw, at)
        if m is None:
            return None
        try:
            cid = m.group(1).decode("utf-8")
        except UnicodeDecodeError:
            return None
        c = self.pending.get(cid)
        # A second record run into this one (#24425) starts with an unescaped `{"timestamp"`, which no JSON
        # string holds: the output string's end and the braces after it, or one C scan of the line (`_alone`).
        if (c is None or c.kind == "tool") and not _alone(raw, at, m, bare):
            return None
        if c is None:
            return _SKIP
        if c.kind == "tool":  # a tool step shows the call, never its output
            out = {"type": "function_call_output", "call_id": cid}
            return out if bare else {"type": "response_item", "payload": out}
        if c.kind not in ("command", "stdin") or m.group(2) is None or len(raw) < CUT_MIN:
            return None
        for head in (1024, 12 * 1024):  # the exit-code header, usually in the first lines
            obj = _cut_record(raw, at, (), head, (m.end() - 1,))
            p = obj if bare else _dig(obj)
            if p is None:
                return None
            if _ends_kept(p.get("output"), True):
                return obj
        return None

    def feed(self, kind: str, p: dict[str, Any], ts: Any) -> Iterable[Step]:
        """The steps one record gives. Not a generator itself (as `feed_raw`): the record's effects on the
        builder happen now, and a record that gives no step (a tool call, context) costs no generator."""
        if ts != self._ts:  # records come in bursts with one timestamp: parse each once
            self._ts, self._at = ts, (parse_time(ts) if ts is not None and not self.lean else None)
        at = self._at
        if kind != "unknown":
            self.known += 1
        if kind == "response_item":
            t = p.get("type")
            if t in _CALL_TYPES:  # (`_response_item`'s branches, without its generator)
                self._call(p, at)
                return ()
            if t in _OUTPUT_TYPES:
                return self._output(p, at)
            return self._response_item(p, at)
        if kind == "event_msg":
            if p.get("type") == "item_completed":  # (`_event`'s branch, without its generator)
                item = p.get("item")
                if not isinstance(item, dict):
                    return ()
                if item.get("type") == "CommandExecution":
                    return self._command_item(item, at)
                return self._item(item, at)
            return self._event(p, at)
        if kind == "turn_context":
            self.cwd = _str(p.get("cwd")) or self.cwd
        elif kind == "bare_meta":
            self.bare = True
        return ()

    def finish(self, stats: ReadStats | None = None) -> Iterator[Step]:
        yield from self.end_steps()
        self.report(stats)
        self.decode_later()

    def end_steps(self) -> Iterator[Step]:
        """The steps the end of the file gives: calls still waiting, messages still held."""
        yield from self._settle(None, at_end=True)
        yield from self._flush_held()

    def report(self, stats: ReadStats | None) -> None:
        if stats is not None and self.lines and not self.known:
            stats.problems.append(f"no Codex records recognised in {self.lines} non-blank lines")
        if stats is not None and self.bad_args:
            stats.problems.append(f"{self.bad_args} tool calls whose arguments could not be decoded")

    def decode_later(self, last: int | None = None) -> None:
        """The iteration ends here: decode the outputs the consumer will read (of the `last` held ones; None:
        all the deque holds, the last `recent`)."""
        if self.later:
            held = list(self.later)
            for step, later, fallback in held[len(held) - min(last, len(held)):] if last is not None else held:
                text = later.text()
                step.output = _output_tail(text) if text else fallback
            self.later.clear()

    def state_key(self) -> tuple[Any, ...]:
        """Everything the builder's future steps depend on, as plain values: two builders with equal keys give
        the same steps for the same lines that follow (`stores.codex.halves`). Counters are not part of it
        (they only add up), nor the held outputs (`decode_later`), nor the settled call ids (`done`: only asked
        about, see `halves`); a call's code-mode mark counts from the steps emitted so far."""
        return (self.cwd, self.bare, self.events_form, self.fast, self.lean, self.later is not None,
                [_step_key(s) for s in self.held],
                [(cid, c.kind, c.text, c.at, c.cwd, c.output, c.writes,
                  None if c.mark is None else self.emitted - c.mark) for cid, c in self.pending.items()],
                list(self.running.items()), _step_key(self.prev), self.last_message,
                self.big_skipped > 0)

    def quiet(self) -> bool:
        """Nothing held, no call waiting or running: `state()` is all there is to go on from."""
        return not self.pending and not self.running and not self.held

    def state(self) -> tuple[Any, ...]:
        """What a later builder needs to go on from here, while quiet (segue.stores.codex.resume), as plain
        values: the turn's cwd, the file's form, the settled call ids of the turn, the counters, and of the last
        step and last message only what `_say` compares (kind, text digests: no session text)."""
        from segue.stores.resume_mark import text_digest

        prev = self.prev
        return (self.cwd, self.bare, self.events_form, self.fast, self.lean, self.later is not None,
                sorted(self.done), None if prev is None else prev.kind,
                None if prev is None else text_digest(prev.text), text_digest(self.last_message),
                self.big_skipped, self.lines, self.known, self.bad_args, self.emitted, self.later_added)

    def restore(self, state: Any) -> bool:
        """Go on from `state()` (a fresh builder only); False (nothing changed) when it was another kind of
        builder's."""
        from segue.stores.resume_mark import SameText

        (cwd, bare, events_form, fast, lean, later, done, prev_kind, prev_text, last_message,
         big_skipped, lines, known, bad_args, emitted, later_added) = state
        if (fast, lean, later) != (self.fast, self.lean, self.later is not None) or later or self.lines \
                or not self.quiet() or self.prev is not None:
            return False
        if not all(isinstance(v, int) for v in (big_skipped, lines, known, bad_args, emitted, later_added)):
            return False
        self.cwd, self.bare, self.events_form = cwd, bool(bare), bool(events_form)
        self.done = {str(c) for c in done}
        # what `_say` compares the next request and message with: equal to the same texts, and only to them
        self.prev = None if prev_kind is None else Step(prev_kind, cast(str, SameText(prev_text)))
        self.last_message = None if last_message is None else cast(str, SameText(last_message))
        self.big_skipped, self.lines, self.known, self.bad_args = big_skipped, lines, known, bad_args
        self.emitted, self.later_added = emitted, later_added
        return True

    # -- emitting

    def _out(self, step: Step) -> Iterator[Step]:
        self.prev = step
        yield step

    def _emit(self, step: Step) -> Iterator[Step]:
        """A non-message step; held response-item messages before it come out first."""
        self.emitted += 1
        if self.held:
            yield from self._flush_held()
        self.prev = step  # `_out`, inline: one generator less per step
        yield step

    def _flush_held(self) -> Iterator[Step]:
        held, self.held = self.held, []
        if not self.events_form:
            for s in held:
                yield from self._say(s)

    def _say(self, s: Step) -> Iterator[Step]:
        """A request or message, without the duplicates the store's two forms produce."""
        if s.kind == "request":
            if self.prev is not None and self.prev.kind == "request" and self.prev.text == s.text:
                return
            self.last_message = None
        else:
            if s.text == self.last_message:
                return  # e.g. task_complete.last_agent_message repeating the final AgentMessage
            self.last_message = s.text
        yield from self._out(s)

    def _say_event(self, s: Step) -> Iterator[Step]:
        self.events_form = True
        self.held = []
        yield from self._say(s)

    def _hold(self, s: Step) -> Iterator[Step]:
        if self.bare:
            yield from self._say(s)
            return
        self.held.append(s)
        if len(self.held) > 64:  # a wrapped file without events: do not hold a whole session
            yield from self._say(self.held.pop(0))

    # -- response items

    def _response_item(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        t = p.get("type")
        if t == "message":
            role = p.get("role")
            if role == "user":
                yield from self._user_shell(p, at)
                text = None if self.events_form else user_item_request(p)
                if text:
                    yield from self._hold(Step("request", _cap(text, STEP_TEXT), at))
            elif role == "assistant" and not self.events_form:
                texts, _ = _content_texts(p.get("content"), ("output_text", "text"))
                text = "\n".join(x for x in texts if x.strip()).strip()
                if text:
                    yield from self._hold(Step("message", _cap(text, STEP_TEXT), at))
        elif t == "web_search_call":  # (calls and their outputs: `feed` hands them to `_call` and `_output`)
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            q = _str(action.get("query")) or _str(p.get("query"))
            yield from self._emit(Step("tool", _cap(f"web_search: {q}" if q else "web_search", STEP_TEXT), at))

    def _user_shell(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        """`<user_shell_command>`: the user's own `!cmd`, with its result."""
        texts, _ = _content_texts(p.get("content"), ("input_text", "text"))
        for t in texts:
            if _is_fragment(t, _SHELL_FRAGMENT):
                m = _SHELL_CMD_RE.search(t)
                code, _ = exit_code_from_output(t.split("<result>", 1)[-1].strip())
                if m:
                    yield from self._emit(Step("command", _cap(m.group(1), STEP_TEXT), at, exit_code=code))

    def _call(self, p: dict[str, Any], at: float | None) -> None:
        t = p.get("type")
        name = str(p.get("name") or "")
        short = name if name in _EXEC_TOOLS else name.rsplit(".", 1)[-1]
        call_id = _str(p.get("call_id")) or _str(p.get("id"))
        if call_id is None or call_id in self.done:
            return
        if t == "local_shell_call":
            action = p.get("action") if isinstance(p.get("action"), dict) else {}
            cmd = command_text(action.get("command"))
            if cmd:
                self.pending[call_id] = _Call("command", _cap(cmd, STEP_TEXT), at,
                                              _str(action.get("working_directory")) or self.cwd)
            return
        if t == "custom_tool_call":
            inp = p.get("input")
            args: dict[str, Any] = inp if isinstance(inp, dict) else {"input": inp}
        else:
            raw_args = p.get("arguments")
            parsed = loads(raw_args) if isinstance(raw_args, str) else raw_args
            if isinstance(raw_args, str) and raw_args.strip() and parsed is None:
                self.bad_args += 1
            args = parsed if isinstance(parsed, dict) else {"input": raw_args}
        workdir = _abs(_str(args.get("workdir")) or "", self.cwd) or self.cwd
        if short in _EXEC_TOOLS:
            cmd = command_text(args.get("cmd") if "cmd" in args else args.get("command"))
            if "*** Begin Patch" in cmd[:4096] and re.match(r"\s*apply_patch\b", cmd):
                self._patch_call(call_id, cmd, at, workdir)  # apply_patch run through the shell
            elif cmd:
                self.pending[call_id] = _Call("command", _cap(cmd, STEP_TEXT), at, workdir)
        elif short in _PATCH_TOOLS:
            patch = args.get("input") or args.get("patch")
            self._patch_call(call_id, patch if isinstance(patch, str) else "", at, workdir)
        elif short in _SPAWN_TOOLS:
            self.pending[call_id] = _Call("spawn", _cap(_spawn_task(args), STEP_TEXT), at)
        elif short == "write_stdin":
            sid = args.get("session_id")
            if isinstance(sid, int):
                self.pending[call_id] = _Call("stdin", str(sid), at)
        elif short not in _QUIET_TOOLS:
            c = _Call("tool", _cap(f"{name}: {_short_args(args)}", STEP_TEXT), at)
            if name in _CODE_MODE_TOOLS:
                c.mark = self.emitted  # a code-mode cell: its nested calls come as their own items
            self.pending[call_id] = c

    def _patch_call(self, call_id: str, patch: str, at: float | None, cwd: str | None) -> None:
        c = _Call("patch", "", at, cwd)
        c.writes = patch_changes(patch, cwd)
        self.pending[call_id] = c

    def _output(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        call_id = _str(p.get("call_id")) or ""
        c = self.pending.get(call_id)
        if c is None:
            return
        raw_out = p.get("output")
        text = output_text(raw_out)
        if c.kind == "command":
            code, running = exit_code_from_output(text)
            if running is not None:
                self.running[running] = call_id  # a later write_stdin output carries the code
                c.output = None if self.lean else _output_tail(text)
                return
            if code is None and isinstance(raw_out, dict) and raw_out.get("success") is True:
                code = 0
            if code is None:
                c.output = None if self.lean else _output_tail(text)
                return  # wait for an item/event with the code, else settle at the turn's end
            yield from self._command_done(call_id, c, code, text)
            return
        del self.pending[call_id]
        self.done.add(call_id)
        if c.kind == "stdin":
            code, still = exit_code_from_output(text)
            cid = self.running.pop(int(c.text), None) if still is None else None
            rc = self.pending.get(cid or "")
            if rc is not None and cid is not None and code is not None:
                yield from self._command_done(cid, rc, code, text)
        elif c.kind == "patch":
            code, _ = exit_code_from_output(text)
            low = text.lstrip().lower()
            failed = (code is not None and code != 0) or low.startswith(
                ("apply_patch verification failed", "error", "failed", "invalid patch"))
            if not failed:
                for path, added, removed in c.writes:
                    yield from self._emit(Step("edit", path, c.at, path=path, added=added, removed=removed))
        elif c.kind == "spawn":
            yield from self._emit(Step("subagent", c.text, c.at, ref=_child_id(text)))
        elif not self._wrapped_others(c):
            yield from self._emit(Step("tool", c.text, c.at))

    def _wrapped_others(self, c: _Call) -> bool:
        """A code-mode `exec` cell whose nested tool calls produced steps of their own since it began: the
        cell is only their wrapper (Codex 0.154)."""
        return c.mark is not None and self.emitted > c.mark

    def _command_done(self, call_id: str, c: _Call, code: int | None, text: str | LaterOutput | None
                      ) -> Iterator[Step]:
        self.pending.pop(call_id, None)
        self.done.add(call_id)
        if isinstance(text, LaterOutput):  # decoded in `finish` if still among the last steps (or never: lean)
            step = Step("command", c.text, c.at, exit_code=code, output=None if self.lean else c.output)
            if self.later is not None:
                self.later.append((step, text, c.output))
                self.later_added += 1
        else:
            out = _output_tail(text) if text and not self.lean else c.output
            step = Step("command", c.text, c.at, exit_code=code, output=out)
        yield from self._emit(step)
        if code == 0:
            for path, added, removed in shell_writes(c.text, c.cwd or self.cwd):
                yield from self._emit(Step("edit", path, c.at, path=path, added=added, removed=removed))

    # -- events

    def _event(self, p: dict[str, Any], at: float | None) -> Iterator[Step]:
        t = p.get("type")
        if t == "user_message":
            yield from self._turn_start()
            text = event_request(p)
            if text:
                yield from self._say_event(Step("request", _cap(text, STEP_TEXT), at))
        elif t == "agent_message":
            msg = p.get("message")
            if isinstance(msg, str) and msg.strip():
                yield from self._say_event(Step("message", _cap(msg.strip(), STEP_TEXT), at))
        elif t == "exec_command_end":  # (a completed item: `feed` hands it to `_item` or `_command_item`)
            if str(p.get("source") or "").lower().replace("_", "") == "usershell":
                return  # the <user_shell_command> item carries it
            yield from self._ended_command(_str(p.get("call_id")) or "", p.get("command"),
                                           p.get("exit_code"), at,
                                           _str(p.get("aggregated_output")) or _str(p.get("stdout")))
        elif t == "patch_apply_end":
            yield from self._changes(_str(p.get("call_id")) or "", p.get("changes"),
                                     p.get("success") is False, at)
        elif t in ("task_complete", "turn_complete"):
            yield from self._settle()
            yield from self._flush_held()
            last = p.get("last_agent_message")
            if isinstance(last, str) and last.strip():
                yield from self._say(Step("message", _cap(last.strip(), STEP_TEXT), at))
        elif t == "turn_aborted":
            yield from self._settle("interrupted")
            yield from self._flush_held()
        elif t in ("task_started", "turn_started"):
            yield from self._turn_start()
        elif t == "collab_agent_spawn_end":
            yield from self._spawned(_str(p.get("call_id")) or "", _str(p.get("prompt")),
                                     _str(p.get("new_thread_id")), at)

    def _item(self, item: dict[str, Any], at: float | None) -> Iterator[Step]:
        it = item.get("type")
        if it == "UserMessage":
            yield from self._turn_start()
            text = item_request(item)
            if text:
                yield from self._say_event(Step("request", _cap(text, STEP_TEXT), at))
        elif it == "AgentMessage":
            texts, _ = _content_texts(item.get("content"), ("Text", "text", "output_text"))
            text = "".join(texts).strip()
            if text:
                yield from self._say_event(Step("message", _cap(text, STEP_TEXT), at))
        elif it == "CommandExecution":
            yield from self._command_item(item, at)
        elif it == "FileChange":
            failed = str(item.get("status") or "").lower() in ("failed", "declined")
            yield from self._changes(_str(item.get("id")) or "", item.get("changes"), failed, at)
        elif it == "CollabAgentToolCall" and str(item.get("tool")) in ("spawnAgent", "spawn_agent"):
            receivers = item.get("receiver_thread_ids") or item.get("receiverThreadIds") or []
            ref = receivers[0] if receivers and isinstance(receivers[0], str) else None
            yield from self._spawned(_str(item.get("id")) or "", _str(item.get("prompt")), ref, at)

    def _command_item(self, item: dict[str, Any], at: float | None) -> Iterable[Step]:
        """A completed `CommandExecution` item (not a generator: most give their one step at once)."""
        if str(item.get("source") or "").lower().replace("_", "") == "usershell":
            return ()
        code = item.get("exit_code", item.get("exitCode"))
        if str(item.get("status") or "").lower().replace("_", "") == "inprogress":
            code = None
        out = item.get("aggregated_output")
        if not isinstance(out, LaterOutput):
            out = _str(out) or _str(item.get("aggregatedOutput"))
        return self._ended_command(_str(item.get("id")) or "", item.get("command"), code, at, out)

    def _ended_command(self, cid: str, command: Any, code: Any, at: float | None,
                       out: str | LaterOutput | None) -> Iterable[Step]:
        """The command's step (and the files it wrote), or nothing; the builder's state changes now."""
        if cid and cid in self.done:
            return ()
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        c = self.pending.get(cid)
        if c is None:
            text = command_text(command)
            if not text:
                return ()
            c = _Call("command", _cap(text, STEP_TEXT), at, self.cwd)
        elif c.kind != "command":
            return ()
        if self.running:
            for sid, rcid in list(self.running.items()):
                if rcid == cid:
                    del self.running[sid]
        return self._command_done(cid, c, code, out)

    def _changes(self, cid: str, changes: Any, failed: bool, at: float | None) -> Iterator[Step]:
        if cid and cid in self.done:
            return
        c = self.pending.pop(cid, None)
        self.done.add(cid)
        if failed:
            return
        found = changes_map(changes, c.cwd if c else self.cwd) or (c.writes if c else [])
        for path, added, removed in found:
            yield from self._emit(Step("edit", path, at, path=path, added=added, removed=removed))

    def _spawned(self, cid: str, task: str | None, ref: str | None, at: float | None) -> Iterator[Step]:
        if cid and cid in self.done:
            return
        c = self.pending.pop(cid, None)
        self.done.add(cid)
        text = task or (c.text if c else "")
        yield from self._emit(Step("subagent", _cap(text, STEP_TEXT), c.at if c else at, ref=ref))

    def _turn_start(self) -> Iterator[Step]:
        yield from self._settle("interrupted")
        self.done.clear()  # call ids only dedupe forms within a turn: keep memory flat

    def _settle(self, status: str | None = None, *, at_end: bool = False) -> Iterator[Step]:
        """At a turn's edge, calls still without a usable output end with what is known: `status` says why
        the code is unknown (a new turn or an abort interrupted them; at the end of the file a command Codex
        reported as still running is `running`, any other is simply unknown)."""
        pending, self.pending = self.pending, {}
        running = set(self.running.values())
        self.running.clear()
        for cid, c in pending.items():
            self.done.add(cid)
            if c.kind == "command":  # exit code unknown
                why = ("running" if cid in running else None) if at_end else status
                yield from self._emit(Step("command", c.text, c.at, exit_code=None, output=c.output, status=why))
            elif c.kind == "patch":
                # no output recorded (a crash, or a resume): the change may well have happened
                for path, added, removed in c.writes:
                    yield from self._emit(Step("edit", path, c.at, path=path, added=added, removed=removed))
            elif c.kind == "spawn":
                yield from self._emit(Step("subagent", c.text, c.at))
            elif c.kind == "tool" and not self._wrapped_others(c):
                yield from self._emit(Step("tool", c.text, c.at))


STEP_FIELDS = tuple(f.name for f in fields(Step))


def step_values(s: Step) -> tuple[Any, ...]:
    """A step as plain values (every field, in order: `Step(*values)` makes it again)."""
    return tuple(getattr(s, name) for name in STEP_FIELDS)


def _step_key(s: Step | None) -> tuple[Any, ...] | None:
    return None if s is None else step_values(s)


def _spawn_task(args: dict[str, Any]) -> str:
    for key in ("message", "task", "prompt", "instructions", "description"):
        if isinstance(args.get(key), str) and args[key].strip():
            return args[key].strip()
    items = args.get("items")
    if isinstance(items, list):
        texts, _ = _content_texts(items, ("text", "input_text"))
        if texts:
            return "\n".join(texts).strip()
    return ""
_ANY_UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _child_id(text: str) -> str | None:
    """The child thread id in a spawn_agent output (`{"agent_id": …}`), else the first UUID in it."""
    obj = loads(text) if text.lstrip().startswith("{") else None
    if isinstance(obj, dict):
        for key in ("agent_id", "thread_id", "new_thread_id", "id"):
            if isinstance(obj.get(key), str):
                return obj[key]
    m = _ANY_UUID_RE.search(text)
    return m.group(0) if m else None


def _short_args(args: dict[str, Any]) -> str:
    for key in ("query", "path", "url", "q", "file", "explanation"):
        if isinstance(args.get(key), str) and args[key]:
            return args[key][:200]
    try:
        s = json.dumps(args, ensure_ascii=False)
    except (TypeError, ValueError):
        s = ""
    return s if len(s) <= 200 else s[:199] + "…"
