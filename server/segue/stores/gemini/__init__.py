"""Gemini CLI: chats under `$GEMINI_CLI_HOME/.gemini/tmp/<project>/chats/` (`reader`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from segue.stores.descriptor import RuntimeDescriptor, lazy_attributes

if TYPE_CHECKING:
    from segue.stores.base import Env, Reader


def _reader(env: Env) -> Reader:
    from segue.stores.gemini.reader import GeminiReader

    return GeminiReader(env)


def resume_argv(session_id: str) -> list[str]:
    """Reopen a session natively, interactive. `gemini --resume ID` looks the id up among the sessions of
    the current directory's project only (from another directory it exits 42): run it in the session's cwd."""
    return ["gemini", "--resume", session_id]


def new_session_argv(first_prompt: str) -> list[str]:
    """A new interactive session that starts with first_prompt (`--prompt-interactive`; `-p` would be
    one-shot and exit)."""
    return ["gemini", "--prompt-interactive", first_prompt]


DESCRIPTOR = RuntimeDescriptor(
    id="gemini", name="Gemini CLI", cli="gemini", install="npm install -g @google/gemini-cli",
    reader=_reader,
    icon="star-empty",
    native_argv=resume_argv,
    new_session_argv=new_session_argv,
    cwd_bound=True,
    env_overrides=("GEMINI_CLI_HOME",),  # replaces the home directory; `.gemini` stays below it
    branch_from_checkout=True,  # Gemini CLI stores no branch (its footer shows the live one)
)

# the reader's names load on first use: the registry needs only the descriptor
__getattr__ = lazy_attributes(__name__, "reader")
