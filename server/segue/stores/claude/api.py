"""The Claude Code reader's public names (loaded on first use through `segue.stores.claude`)."""


from __future__ import annotations

from segue.stores.base import HEAD_BYTES
from segue.stores.claude.reader import ClaudeReader
from segue.stores.claude.records import request_text, subagent_session_id
from segue.stores.claude.steps import command_exit_code, command_result
from segue.stores.claude.summary import Chunk as _Chunk
from segue.stores.text import OUTPUT_TAIL, STEP_TEXT

__all__ = ["HEAD_BYTES", "OUTPUT_TAIL", "STEP_TEXT", "ClaudeReader", "_Chunk", "command_exit_code",
           "command_result", "request_text", "subagent_session_id"]
