"""Gemini API dialect of the fake model (Gemini CLI, through the @google/genai SDK).

Routes (``GOOGLE_GEMINI_BASE_URL`` points the SDK here; the SDK adds ``/v1beta/models/<model>:<method>``):
- ``:streamGenerateContent?alt=sse``  the agent's turns: one SSE event ``data: <GenerateContentResponse>``
- ``:generateContent``                side calls (the model router's classifier, JSON-schema answers)
- ``:countTokens``                    a fixed count

A request is a ``contents`` list of ``{role: user|model, parts: [...]}``; parts are ``text``,
``functionCall {name, args}`` or ``functionResponse {name, response}``. The latest real prompt is the last
user text that is not context the CLI injects (``<session_context>`` and friends); tool results are user
contents that carry ``functionResponse`` parts. Scripted actions become ``run_shell_command``,
``write_file`` and ``invoke_agent`` calls; a subagent (offered ``complete_task``) ends by calling it.

Set ``FAKE_GEMINI_LOG=<file>`` to append each request's turn and the reply as JSON lines.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any

from tests.realruntimes import scenario
from tests.realruntimes.scenario import Action, Turn

MODEL = "gemini-2.5-flash"
# User text parts the CLI injects as context, never the user's request.
_CONTEXT = ("This is the Gemini CLI. We are setting up the context",  # 0.24
            "<session_context>", "<hook_context>", "<system-reminder>", "<memory_context>", "<ide_context>")
# 0.61: "- **Workspace Directories:**\n  - /dir"; 0.24: "I'm currently working in the directory: /dir"
_WORKSPACE = re.compile(r"Workspace Directories:\**\s*\n\s*-\s*(\S+)|working in the directory: (\S+)")
_log_lock = threading.Lock()


def _parts(content: Any) -> list[dict[str, Any]]:
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts or [] if isinstance(p, dict)]


def tool_names(req: dict[str, Any]) -> tuple[str, ...]:
    return tuple(f.get("name", "") for t in req.get("tools") or [] if isinstance(t, dict)
                 for f in t.get("functionDeclarations") or [] if isinstance(f, dict))


def gemini_turn(req: dict[str, Any]) -> Turn:
    prompt, results = "", 0
    for content in req.get("contents") or []:
        if not isinstance(content, dict) or content.get("role", "user") != "user":
            continue
        parts = _parts(content)
        if any("functionResponse" in p for p in parts):
            results += 1
            continue
        texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
        texts = [t for t in texts if t.strip() and not t.lstrip().startswith(_CONTEXT)]
        if texts:
            prompt, results = "\n".join(texts), 0
    return Turn(prompt=prompt, tool_results_since_prompt=results, tools_offered=tool_names(req))


def workspace_dir(req: dict[str, Any]) -> str:
    """The first workspace directory the CLI lists in its `<session_context>` part."""
    for content in req.get("contents") or []:
        for p in _parts(content):
            m = _WORKSPACE.search(p.get("text") or "") if isinstance(p.get("text"), str) else None
            if m:
                return m.group(1) or m.group(2)
    return ""


def _declaration(req: dict[str, Any], name: str) -> dict[str, Any]:
    for t in req.get("tools") or []:
        for f in t.get("functionDeclarations") or []:
            if f.get("name") == name:
                return f
    return {}


def _schema_answer(schema: Any) -> Any:
    """A value matching a JSON schema (the router classifier, the next-speaker check, titles)."""
    if not isinstance(schema, dict):
        return scenario.TITLE
    kind = str(schema.get("type", "")).lower()
    if schema.get("enum"):
        return "user" if "user" in schema["enum"] else schema["enum"][0]
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: ("user" if k == "next_speaker" else _schema_answer(v)) for k, v in props.items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 10
    if kind == "boolean":
        return False
    return scenario.TITLE


def _fill(schema: Any, text: str) -> Any:
    """Arguments for a declared function: every required string gets the text (objects nest)."""
    if not isinstance(schema, dict):
        return text
    if str(schema.get("type", "")).lower() == "object":
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)[:1]
        return {k: _fill(props.get(k), text) for k in required}
    return text


def _structured(req: dict[str, Any]) -> str | None:
    cfg = req.get("generationConfig") or {}
    schema = cfg.get("responseJsonSchema") or cfg.get("responseSchema")
    if cfg.get("responseMimeType") != "application/json" and not schema:
        return None
    return json.dumps(_schema_answer(schema) if schema else {})


def action_parts(req: dict[str, Any], action: Action, turn: Turn) -> list[dict[str, Any]]:
    if action.kind == "text":
        if "complete_task" in turn.tools_offered:  # a subagent must hand its answer back through this tool
            decl = _declaration(req, "complete_task")
            args = _fill(decl.get("parametersJsonSchema") or decl.get("parameters") or {}, action.text)
            return [{"functionCall": {"name": "complete_task", "args": args}}]
        return [{"text": action.text}]
    if action.kind == "bash":
        call = {"name": "run_shell_command", "args": {"command": action.command,
                                                      "description": "Run the command"}}
    elif action.kind == "write":
        cwd = workspace_dir(req)
        path = os.path.join(cwd, action.path) if cwd else action.path
        call = {"name": "write_file", "args": {"file_path": path, "content": action.content}}
    elif action.kind == "agent":
        call = {"name": "invoke_agent", "args": {"agent_name": "generalist", "prompt": action.prompt}}
    else:
        raise ValueError(f"unknown action {action.kind}")
    return [{"functionCall": call}]


def _response(parts: list[dict[str, Any]], model: str) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120},
            "modelVersion": model}


def handle_gemini(path: str, query: str, req: dict[str, Any]) -> tuple[str, list[bytes]]:
    """Reply to one Gemini API request: (content type, body chunks)."""
    model = path.rsplit("/", 1)[-1].split(":", 1)[0] or MODEL
    if path.endswith(":countTokens"):
        return "application/json", [b'{"totalTokens":100}']
    turn = gemini_turn(req)
    structured = _structured(req)
    parts = ([{"text": structured}] if structured is not None
             else action_parts(req, scenario.next_action(turn), turn))
    _log(turn, parts)
    body = _response(parts, model)
    if path.endswith(":streamGenerateContent"):
        if "alt=sse" in query:
            return "text/event-stream", [f"data: {json.dumps(body, separators=(',', ':'))}\r\n\r\n".encode()]
        return "application/json", [json.dumps([body]).encode()]
    return "application/json", [json.dumps(body).encode()]


def _log(turn: Turn, parts: list[dict[str, Any]]) -> None:
    where = os.environ.get("FAKE_GEMINI_LOG")
    if not where:
        return
    line = json.dumps({"prompt": turn.prompt[:200], "results": turn.tool_results_since_prompt,
                       "tools": list(turn.tools_offered), "reply": parts})
    with _log_lock, open(where, "a") as f:
        f.write(line + "\n")
