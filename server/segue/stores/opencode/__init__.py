"""OpenCode: its SQLite database and legacy JSON storage under `$XDG_DATA_HOME/opencode` (`reader`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from segue.stores.descriptor import RuntimeDescriptor, lazy_attributes

if TYPE_CHECKING:
    from segue.stores.base import Env, Reader


def _reader(env: Env) -> Reader:
    from segue.stores.opencode.reader import OpencodeReader

    return OpencodeReader(env)


DESCRIPTOR = RuntimeDescriptor(
    id="opencode", name="OpenCode", cli="opencode", install="npm install -g opencode-ai",
    reader=_reader,
    database=True,
    icon="code",
    native_argv=lambda session_id: ["opencode", "--session", session_id],
    new_session_argv=lambda prompt: ["opencode", "--prompt", prompt],
    # `opencode --session ID` elsewhere opens the project of the current directory, not the session's
    cwd_bound=True,
    env_overrides=("XDG_DATA_HOME", "OPENCODE_DB"),
    branch_from_checkout=True,  # OpenCode stores no branch
)

# the reader's names load on first use: the registry needs only the descriptor
__getattr__ = lazy_attributes(__name__, "reader")
