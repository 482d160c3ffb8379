"""A scripted fake model server for running the real runtimes offline (stdlib only).

Routes:
- ``POST /v1/messages``          Anthropic Messages (SSE or JSON), Claude Code
- ``POST /v1/messages/count_tokens``
- ``POST /v1/responses``         OpenAI Responses (SSE), Codex
- ``POST /v1/chat/completions``  delegated to ``tests.realruntimes.fake_chat.handle_chat`` (OpenCode, Cline)
- ``POST /v1beta/models/<model>:<method>``  Gemini API, delegated to ``tests.realruntimes.fake_gemini``
Anything else gets an empty JSON object (GET) or 404 (POST), so probes never hang a runtime.

Every dialect turns its request into a ``scenario.Turn`` and renders ``scenario.next_action`` as its own
stream; the server keeps no conversation state. Set ``FAKEMODEL_LOG=<dir>`` to dump each request body
(numbered) for debugging a runtime's request shape.

Run: ``python -m tests.realruntimes.fakemodel --port 18080``; import: ``start(port=0) -> (server, port)``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.realruntimes import scenario
from tests.realruntimes.scenario import Action, Turn

MODEL = "fake-model"
_counter = itertools.count(1)

# Called as observer(path, request) before each Anthropic/Responses reply, e.g. by a generator that copies
# a database while the runtime waits for this answer (its writes are paused then).
observer: Callable[[str, dict[str, Any]], None] | None = None


def _sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _short_id(*parts: object) -> str:
    # Deterministic ids: the same request yields the same ids, so regenerated fixtures differ less.
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:24]


# ---------------------------------------------------------------- Anthropic Messages (Claude Code)

_CLAUDE_WRAPPERS = ("<system-reminder>", "<command-", "<local-command-", "Caveat: ")


def _claude_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def _claude_has_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def anthropic_turn(req: dict[str, Any]) -> Turn:
    """The latest user prompt (wrappers dropped) and how many tool-result messages followed it."""
    prompt, results = "", 0
    for msg in req.get("messages") or []:
        if msg.get("role") != "user":  # Claude appends a role:"system" note after the prompt: skip it
            continue
        content = msg.get("content")
        if _claude_has_tool_result(content):
            results += 1
            continue
        texts = [t for t in _claude_texts(content) if t and not t.lstrip().startswith(_CLAUDE_WRAPPERS)]
        if texts:
            prompt, results = "\n".join(texts), 0
    tools = tuple(t.get("name", "") for t in req.get("tools") or [])
    return Turn(prompt=prompt, tool_results_since_prompt=results, tools_offered=tools)


def _claude_cwd(req: dict[str, Any]) -> str:
    system = req.get("system")
    texts = [system] if isinstance(system, str) else [b.get("text", "") for b in system or []]
    for msg in req.get("messages") or []:
        texts += _claude_texts(msg.get("content"))
    m = re.search(r"Primary working directory: (\S+)|Working directory: (\S+)", "\n".join(texts))
    return (m.group(1) or m.group(2)) if m else ""


def anthropic_content(req: dict[str, Any], action: Action, turn: Turn) -> tuple[list[dict[str, Any]], str]:
    """Content blocks and stop_reason for one scripted action."""
    if action.kind == "text":
        return [{"type": "text", "text": action.text}], "end_turn"
    if action.kind == "bash":
        name, args = "Bash", {"command": action.command, "description": "Run the command"}
    elif action.kind == "write":
        path = os.path.join(_claude_cwd(req), action.path)
        name, args = "Write", {"file_path": path, "content": action.content}
    elif action.kind == "agent":
        name, args = "Agent", {"description": action.description, "prompt": action.prompt,
                               "subagent_type": "general-purpose"}
    else:
        raise ValueError(f"unknown action {action.kind}")
    tid = "toolu_" + _short_id(turn.prompt, turn.tool_results_since_prompt, len(req.get("messages") or []))
    return [{"type": "tool_use", "id": tid, "name": name, "input": args}], "tool_use"


def _structured(req: dict[str, Any]) -> str | None:
    """JSON for a structured-output request (Claude's session title call asks for {"title": …})."""
    fmt = (req.get("output_config") or {}).get("format") or {}
    props = (fmt.get("schema") or {}).get("properties")
    if fmt.get("type") != "json_schema" or not isinstance(props, dict):
        return None
    return json.dumps({k: scenario.TITLE for k, v in props.items() if (v or {}).get("type") == "string"})


def anthropic_reply(req: dict[str, Any]) -> tuple[str, list[bytes]]:
    turn = anthropic_turn(req)
    structured = None if turn.tools_offered else _structured(req)
    action = Action("text", text=structured) if structured else scenario.next_action(turn)
    blocks, stop = anthropic_content(req, action, turn)
    mid = "msg_" + _short_id("m", turn.prompt, turn.tool_results_since_prompt, next(_counter))
    usage = {"input_tokens": 100, "output_tokens": 20, "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": 0}
    if not req.get("stream"):
        msg = {"id": mid, "type": "message", "role": "assistant", "model": req.get("model", MODEL),
               "content": blocks, "stop_reason": stop, "stop_sequence": None, "usage": usage}
        return "application/json", [json.dumps(msg).encode()]
    out = [_sse("message_start", {"type": "message_start", "message": {
        "id": mid, "type": "message", "role": "assistant", "model": req.get("model", MODEL), "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": {"type": "text", "text": ""}}))
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": start}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(_sse("message_delta", {"type": "message_delta",
                                      "delta": {"stop_reason": stop, "stop_sequence": None},
                                      "usage": {"output_tokens": 20}}))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "text/event-stream", out


# ---------------------------------------------------------------- OpenAI Responses (Codex)

# User-role items Codex injects as context, never a prompt (codex-rs contextual_user_message.rs).
_CODEX_CONTEXT = ("<environment_context", "# agents.md instructions", "<user_instructions", "<skill",
                  "<turn_aborted", "<subagent_notification", "<additional_context", "<apps_instructions",
                  "<skills_instructions", "<plugins_instructions", "<collaboration_mode", "<permissions")
_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")


def _codex_text(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


def _codex_tool_names(req: dict[str, Any]) -> tuple[str, ...]:
    names: list[str] = []
    for tool in req.get("tools") or []:
        for sub in tool.get("tools") or []:  # a namespace groups its functions
            names.append(f"{tool.get('name')}.{sub.get('name')}")
        if tool.get("name"):
            names.append(tool["name"])
    return tuple(names)


def responses_turn(req: dict[str, Any]) -> Turn:
    prompt, results = "", 0
    for item in req.get("input") or []:
        kind = item.get("type", "message")
        if kind in _OUTPUT_TYPES:
            results += 1
        elif kind == "message" and item.get("role") == "user":
            text = _codex_text(item)
            if text.strip() and not text.lstrip().lower().startswith(_CODEX_CONTEXT):
                prompt, results = text, 0
    return Turn(prompt=prompt, tool_results_since_prompt=results, tools_offered=_codex_tool_names(req))


def _pending_spawn(req: dict[str, Any]) -> str | None:
    """The agent id of the last spawn_agent call when no wait_agent followed it yet."""
    calls: dict[str, str] = {}
    agent: str | None = None
    for item in req.get("input") or []:
        if item.get("type") == "function_call":
            calls[item.get("call_id", "")] = item.get("name", "")
            if item.get("name") == "wait_agent":
                agent = None
        elif (item.get("type") == "function_call_output"
              and calls.get(item.get("call_id", "")) == "spawn_agent"):
            out = item.get("output")
            text = out if isinstance(out, str) else json.dumps(out)
            m = re.search(r'"(?:agent_id|id)"\s*:\s*"([^"]+)"', text)
            agent = m.group(1) if m else text.strip()
    return agent


def responses_item(req: dict[str, Any], action: Action, turn: Turn) -> dict[str, Any]:
    iid = _short_id(turn.prompt, turn.tool_results_since_prompt, len(req.get("input") or []))
    if action.kind == "text":
        return {"type": "message", "id": "msg_" + iid, "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": action.text, "annotations": []}]}
    namespace = None
    if action.kind == "bash":
        name, args = "exec_command", {"cmd": action.command}
    elif action.kind == "write":
        # apply_patch is not offered for unknown models: write through the shell with a quoted heredoc
        cmd = f"cat > {action.path} <<'SEGUE_EOF'\n{action.content.rstrip(chr(10))}\nSEGUE_EOF"
        name, args = "exec_command", {"cmd": cmd}
    elif action.kind == "agent":
        name, args, namespace = "spawn_agent", {"message": action.prompt}, "multi_agent_v1"
    else:
        raise ValueError(f"unknown action {action.kind}")
    item = {"type": "function_call", "id": "fc_" + iid, "call_id": "call_" + iid, "name": name,
            "arguments": json.dumps(args), "status": "completed"}
    if namespace:
        item["namespace"] = namespace
    return item


def responses_reply(req: dict[str, Any]) -> tuple[str, list[bytes]]:
    turn = responses_turn(req)
    pending = _pending_spawn(req)
    if pending is not None:  # Codex needs wait_agent before the child's answer reaches the parent
        iid = _short_id("wait", pending, len(req.get("input") or []))
        item = {"type": "function_call", "id": "fc_" + iid, "call_id": "call_" + iid, "name": "wait_agent",
                "namespace": "multi_agent_v1", "status": "completed",
                "arguments": json.dumps({"targets": [pending], "timeout_ms": 120000})}
    else:
        item = responses_item(req, scenario.next_action(turn), turn)
    rid = "resp_" + _short_id("r", turn.prompt, turn.tool_results_since_prompt, next(_counter))
    base = {"id": rid, "object": "response", "model": req.get("model", MODEL), "output": []}
    created = {"type": "response.created", "response": {**base, "status": "in_progress"}}
    out = [_sse("response.created", created),
           _sse("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                "item": {**item, "status": "in_progress"}})]
    if item["type"] == "message":
        text = item["content"][0]["text"]
        out.append(_sse("response.output_text.delta", {"type": "response.output_text.delta",
                                                        "item_id": item["id"], "output_index": 0,
                                                        "content_index": 0, "delta": text}))
    out.append(_sse("response.output_item.done", {"type": "response.output_item.done", "output_index": 0,
                                                   "item": item}))
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
    out.append(_sse("response.completed", {"type": "response.completed", "response": {
        **base, "status": "completed", "output": [item], "usage": usage}}))
    return "text/event-stream", out


# ---------------------------------------------------------------- Chat Completions (engineer B's module)

def chat_reply(req: dict[str, Any]) -> tuple[str, list[bytes]]:
    try:
        from tests.realruntimes.fake_chat import handle_chat
    except ImportError as exc:  # B's dialect not in the tree yet: say so instead of a bare 500
        raise RuntimeError("chat completions dialect missing: tests/realruntimes/fake_chat.py "
                           f"(handle_chat) could not be imported: {exc}") from exc
    return "text/event-stream", list(handle_chat(req))


# ---------------------------------------------------------------- HTTP

class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SegueFakeModel/1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: runtimes poll a lot
        if os.environ.get("FAKEMODEL_VERBOSE"):
            super().log_message(format, *args)

    def _send(self, status: int, ctype: str, chunks: Iterable[bytes]) -> None:
        body = b"".join(chunks)
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        if ctype == "text/event-stream":
            self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.rstrip("/").endswith("/models"):
            self._send(200, "application/json", [b'{"object":"list","data":[],"models":[]}'])
        else:
            self._send(200, "application/json", [b"{}"])

    def do_HEAD(self) -> None:
        self._send(200, "application/json", [])

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        path = url.path
        _log_request(path, raw)
        try:
            req = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, "application/json", [b'{"error":"bad json"}'])
            return
        try:
            if observer is not None and not path.endswith("/chat/completions"):
                observer(path, req)
            if path.endswith("/messages/count_tokens"):
                ctype, chunks = "application/json", [b'{"input_tokens":100}']
            elif path.endswith("/messages"):
                ctype, chunks = anthropic_reply(req)
            elif path.endswith("/responses"):
                ctype, chunks = responses_reply(req)
            elif path.endswith("/chat/completions"):
                ctype, chunks = chat_reply(req)
            elif "/models/" in path and ":" in path.rsplit("/", 1)[-1]:
                from tests.realruntimes.fake_gemini import handle_gemini
                ctype, chunks = handle_gemini(path, url.query, req)
            else:
                self._send(404, "application/json", [b'{"error":"not found"}'])
                return
        except Exception as exc:  # a broken dialect must show up in the runtime's error, not hang it
            msg = json.dumps({"error": {"type": "fake_model_error", "message": repr(exc)}})
            self._send(500, "application/json", [msg.encode()])
            return
        self._send(200, ctype, chunks)


_log_lock = threading.Lock()
_log_seq = itertools.count(1)


def _log_request(path: str, raw: bytes) -> None:
    where = os.environ.get("FAKEMODEL_LOG")
    if not where:
        return
    with _log_lock:
        n = next(_log_seq)
    d = Path(where)
    d.mkdir(parents=True, exist_ok=True)
    name = f"{os.getpid()}-{n:04d}-{path.strip('/').replace('/', '_')}.json"
    (d / name).write_bytes(raw)


def start(port: int = 0, host: str = "127.0.0.1") -> tuple[ThreadingHTTPServer, int]:
    """Serve in a daemon thread; returns the server (call ``shutdown()``) and its port."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="fakemodel", daemon=True).start()
    return server, server.server_address[1]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port-file", help="write the bound port here once listening")
    args = ap.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), _Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if args.port_file:
        Path(args.port_file).write_text(f"{port}\n")
    print(f"fakemodel listening on {args.host}:{port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()


if __name__ == "__main__":
    main()
