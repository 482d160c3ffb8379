"""Codex CLI reader: rollouts under `$CODEX_HOME/sessions/` and `archived_sessions/` (read-only).

Every generation keeps one JSON object per line:
- X1 bare (until ~Sep 2025): a first line `{id, timestamp, instructions, git}`, then bare response items and
  `{"record_type":"state"}` lines; the cwd only appears inside `<environment_context>`.
- X2..X5 wrapped: envelopes `{timestamp, ordinal?, type, payload}` (`session_meta`, `response_item`,
  `event_msg`, `turn_context`, `compacted`, ...); 0.171 records turns as `event_msg` `item_completed`.
Wrapped files hold most facts twice: a model-facing response item and a UI event. The event form wins;
response items are the fallback (X1, or a file without events).

`state_*.sqlite` is a derived cache that can be stale (`threads.cwd` follows the latest resume), so this
reader uses only the rollout files and `session_index.jsonl` (names).

Modules, one concern each: `text` (what a record's text means), `records` (reading lines, the reference
decode, the fast-path switch), `fast` (fast-path triage on bytes), `summary`, `steps`, `discovery`
(rollout files, live holders, review parents) and `reader` (the `CodexReader`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from segue.stores.descriptor import RuntimeDescriptor, lazy_attributes

if TYPE_CHECKING:
    from segue.stores.base import Env, Reader


def _reader(env: Env) -> Reader:
    from segue.stores.codex.reader import CodexReader

    return CodexReader(env)


DESCRIPTOR = RuntimeDescriptor(
    id="codex", name="Codex CLI", cli="codex", install="npm install -g @openai/codex",
    reader=_reader,
    icon="terminal",
    native_argv=lambda session_id: ["codex", "resume", session_id],
    new_session_argv=lambda prompt: ["codex", prompt],
    cwd_bound=False,  # `codex resume ID` finds any rollout and runs in the session's recorded cwd
    env_overrides=("CODEX_HOME",),
)

# the reader's names load on first use: the registry needs only the descriptor
__getattr__ = lazy_attributes(__name__, "api")
