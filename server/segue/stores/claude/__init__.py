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

from typing import TYPE_CHECKING

from segue.stores.descriptor import RuntimeDescriptor, lazy_attributes

if TYPE_CHECKING:
    from segue.stores.base import Env, Reader


def _reader(env: Env) -> Reader:
    from segue.stores.claude.reader import ClaudeReader

    return ClaudeReader(env)


DESCRIPTOR = RuntimeDescriptor(
    id="claude", name="Claude Code", cli="claude", install="npm install -g @anthropic-ai/claude-code",
    reader=_reader,
    icon="sparkle",
    native_argv=lambda session_id: ["claude", "--resume", session_id],
    new_session_argv=lambda prompt: ["claude", prompt],
    # `claude --resume ID` finds a session only among those of the current directory's project
    cwd_bound=True,
    env_overrides=("CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME"),
)

# the reader's names load on first use: the registry needs only the descriptor
__getattr__ = lazy_attributes(__name__, "api")
