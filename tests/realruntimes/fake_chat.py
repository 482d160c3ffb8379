"""Chat Completions dialect of the fake model (OpenCode and Cline).

`handle_chat(request_json)` turns one `POST /v1/chat/completions` body into SSE chunks. The runtime is
told apart by the tools it offers: Cline offers `run_commands`, OpenCode `bash`. A request without tools
(OpenCode's title call) gets the scripted title text.

Set `FAKE_CHAT_LOG=<file>` to append every request and reply as JSON lines (for debugging a runtime).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any

from tests.realruntimes import scenario
from tests.realruntimes.scenario import Action, Turn

MODEL = "fake-model"

# Cline wraps typed prompts as `<user_input mode="act">…</user_input>`; older shapes use <task>/<feedback>.
_WRAPPED = re.compile(r"<(user_input|task|feedback|user_message)\b[^>]*>(.*?)</\1>", re.S)
# Blocks a runtime appends to a user turn that are context, not the request.
_CONTEXT = re.compile(r"<(environment_details|system-reminder)\b[^>]*>.*?</\1>", re.S)


def _text(content: Any) -> str:
    """Plain text of a message `content` (a string or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
            elif isinstance(part, str):
                out.append(part)
        return "\n".join(out)
    return ""


def clean_prompt(text: str) -> str:
    """The user's words inside a runtime's wrappers: tags unwrapped, context blocks and quotes dropped."""
    m = _WRAPPED.search(text)
    if m:
        text = m.group(2)
    text = _CONTEXT.sub("", text).strip()
    # `opencode run "<p>"` stores the prompt inside one pair of literal quotes.
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text


def _is_tool_result_carrier(msg: dict[str, Any]) -> bool:
    """A user-role message that only carries tool output (some runtimes send results this way)."""
    content = msg.get("content")
    if isinstance(content, list) and content:
        return all(isinstance(p, dict) and p.get("type") == "tool_result" for p in content)
    return False


def tools_offered(request: dict[str, Any]) -> tuple[str, ...]:
    names = []
    for tool in request.get("tools") or []:
        fn = tool.get("function") if isinstance(tool, dict) else None
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            names.append(fn["name"])
    return tuple(names)


def parse_turn(request: dict[str, Any]) -> Turn:
    """The latest real user prompt and how many tool results followed it."""
    messages = [m for m in request.get("messages") or [] if isinstance(m, dict)]
    prompt_at = -1
    for i, msg in enumerate(messages):
        if msg.get("role") != "user" or _is_tool_result_carrier(msg):
            continue
        if clean_prompt(_text(msg.get("content"))):
            prompt_at = i
    prompt = clean_prompt(_text(messages[prompt_at].get("content"))) if prompt_at >= 0 else ""
    results = sum(
        1 for m in messages[prompt_at + 1:]
        if m.get("role") == "tool" or (m.get("role") == "user" and _is_tool_result_carrier(m))
    )
    return Turn(prompt=prompt, tool_results_since_prompt=results, tools_offered=tools_offered(request))


# OpenCode's system prompt says "Working directory: /x", Cline's "4. Working Directory: /x".
_CWD = re.compile(r"Working directory:\s*(/\S+)", re.I)


def _cwd_hint(request: dict[str, Any]) -> str:
    """The agent's working directory as the runtime told the model (write tools want absolute paths)."""
    for msg in request.get("messages") or []:
        m = _CWD.search(_text(msg.get("content")) if isinstance(msg, dict) else "")
        if m:
            return m.group(1)
    return ""


def _tool_call(action: Action, tools: tuple[str, ...], cwd: str) -> tuple[str, dict[str, Any]] | None:
    """Render a scripted action as (tool name, arguments) for the runtime that offered `tools`."""
    def absolute(path: str) -> str:
        return path if path.startswith("/") or not cwd else f"{cwd.rstrip('/')}/{path}"

    if "run_commands" in tools:  # Cline
        if action.kind == "bash":
            return "run_commands", {"commands": [action.command]}
        if action.kind == "write":
            return "editor", {"path": absolute(action.path), "new_text": action.content}
        if action.kind == "agent":
            return "spawn_agent", {"systemPrompt": "You are a helpful subagent.", "task": action.prompt}
    elif "bash" in tools:  # OpenCode
        if action.kind == "bash":
            return "bash", {"command": action.command, "description": "Run a command"}
        if action.kind == "write":
            return "write", {"filePath": absolute(action.path), "content": action.content}
        if action.kind == "agent":
            return "task", {"description": action.description, "prompt": action.prompt,
                            "subagent_type": "general"}
    return None


def _chunk(cid: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": MODEL,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _usage_chunk(cid: str) -> bytes:
    body = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": MODEL, "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def render(action: Action, request: dict[str, Any], turn: Turn) -> list[bytes]:
    # Ids derive from the request so that a rerun of the same scenario streams the same bytes.
    digest = hashlib.sha256(f"{turn.prompt}|{turn.tool_results_since_prompt}|{action}".encode()).hexdigest()
    cid = f"chatcmpl-{digest[:16]}"
    out = [_chunk(cid, {"role": "assistant", "content": ""})]
    call = _tool_call(action, turn.tools_offered, _cwd_hint(request)) if action.kind != "text" else None
    if call is None:
        text = action.text or "OK."
        out.append(_chunk(cid, {"content": text}))
        out.append(_chunk(cid, {}, "stop"))
    else:
        name, args = call
        out.append(_chunk(cid, {"tool_calls": [{"index": 0, "id": f"call_{digest[16:40]}", "type": "function",
                                                "function": {"name": name, "arguments": ""}}]}))
        out.append(_chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": json.dumps(args)}}]}))
        out.append(_chunk(cid, {}, "tool_calls"))
    out.append(_usage_chunk(cid))
    out.append(b"data: [DONE]\n\n")
    return out


# Called with each parsed turn before the reply is sent, while the runtime waits on the model: the
# generator uses it to copy a SQLite store mid-run (see gen_opencode / gen_cline live captures).
observer: Callable[[Turn], None] | None = None
_observer_lock = threading.Lock()  # requests can overlap (OpenCode's title call): one at a time


def handle_chat(request_json: dict[str, Any]) -> list[bytes]:
    """SSE chunks answering one Chat Completions request with the scenario's next action."""
    turn = parse_turn(request_json)
    if observer is not None:
        with _observer_lock:
            observer(turn)
    action = scenario.next_action(turn)
    chunks = render(action, request_json, turn)
    _log(request_json, turn, chunks)
    return chunks


def _log(request: dict[str, Any], turn: Turn, chunks: Iterable[bytes]) -> None:
    path = os.environ.get("FAKE_CHAT_LOG")
    if not path:
        return
    record = {"request": request, "turn": {"prompt": turn.prompt, "results": turn.tool_results_since_prompt,
                                           "tools": list(turn.tools_offered)},
              "reply": [c.decode() for c in chunks]}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(record) + "\n")
