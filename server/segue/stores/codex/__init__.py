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

from segue.stores.codex.discovery import open_rollouts as open_rollouts
from segue.stores.codex.reader import CodexReader as CodexReader
from segue.stores.codex.reader import held_inodes as held_inodes
from segue.stores.codex.records import ZstdMissing as ZstdMissing
from segue.stores.codex.records import decode_records as decode_records
from segue.stores.codex.records import iter_raw_lines as iter_raw_lines
from segue.stores.codex.records import loads_line as loads_line
from segue.stores.codex.records import normalize as normalize
from segue.stores.codex.records import open_rollout as open_rollout
from segue.stores.codex.steps import StepBuilder as StepBuilder
from segue.stores.codex.summary import uuid_from_name as uuid_from_name
from segue.stores.codex.text import DEEP_LIMIT as DEEP_LIMIT
from segue.stores.codex.text import RUNTIME as RUNTIME
from segue.stores.codex.text import command_text as command_text
from segue.stores.codex.text import event_request as event_request
from segue.stores.codex.text import exit_code_from_output as exit_code_from_output
from segue.stores.codex.text import is_context as is_context
from segue.stores.codex.text import patch_changes as patch_changes
from segue.stores.codex.text import shell_writes as shell_writes
from segue.stores.codex.text import unwrap_request as unwrap_request
from segue.stores.codex.text import user_item_request as user_item_request
