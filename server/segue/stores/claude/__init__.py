"""Claude Code reader: `<root>/projects/<encoded-cwd>/<uuid>.jsonl` and its subagent transcripts.

Roots: `$CLAUDE_CONFIG_DIR` (else `~/.claude`), plus `$XDG_CONFIG_HOME/claude` when present.
Generations (runtime-stores.md §1.2):
- C1 (1.0.x): subagent turns sit inline in the parent (`isSidechain:true`); not separate sessions.
- C2 (2.0.x): `projects/<enc>/agent-<agentId>.jsonl` beside the sessions, records carry the PARENT's sessionId.
- C3 (2.1.2+): `projects/<enc>/<uuid>/subagents/[workflows/<wf>/]agent-<agentId>.jsonl` + `.meta.json`.
Subagent files are never top-level sessions: they list as children (parent_id) that cannot be resumed.

Modules: `discovery` (roots, sources, live sessions), `records` (decoding a line, the user's own words),
`summary` (listing facts from head and tail), `steps` (a brief's steps from decoded records), `triage`
(the fast path: lines left undecoded on a positive match, long lines decoded from cut copies).
"""

from __future__ import annotations

from segue.stores.base import HEAD_BYTES
from segue.stores.claude.reader import ClaudeReader
from segue.stores.claude.records import request_text, subagent_session_id
from segue.stores.claude.steps import command_exit_code, command_result
from segue.stores.claude.summary import Chunk as _Chunk
from segue.stores.text import OUTPUT_TAIL, STEP_TEXT

__all__ = ["HEAD_BYTES", "OUTPUT_TAIL", "STEP_TEXT", "ClaudeReader", "_Chunk", "command_exit_code",
           "command_result", "request_text", "subagent_session_id"]
