"""Cline: the CLI 3.x / VS Code 4.1 SDK store (`reader`) and the legacy task stores (`legacy`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from segue.stores.descriptor import RuntimeDescriptor, lazy_attributes

if TYPE_CHECKING:
    from segue.stores.base import Env, Reader


def _reader(env: Env) -> Reader:
    from segue.stores.cline.reader import ClineReader

    return ClineReader(env)


DESCRIPTOR = RuntimeDescriptor(
    id="cline", name="Cline", cli="cline", install="npm install -g cline",
    reader=_reader,
    database=True,
    icon="robot",
    # the CLI defaults to auto-approving: every Cline argv says `--auto-approve false`
    native_argv=lambda session_id: ["cline", "--auto-approve", "false", "--id", session_id],
    # a prompt argument alone runs Cline headless to the end (3.0.65); --tui keeps the session open
    new_session_argv=lambda prompt: ["cline", "--auto-approve", "false", "--tui", prompt],
    cwd_bound=False,
    env_overrides=("CLINE_DIR", "CLINE_DATA_DIR", "CLINE_DB_DATA_DIR", "CLINE_SESSION_DATA_DIR"),
)

# the reader's names load on first use: the registry needs only the descriptor
__getattr__ = lazy_attributes(__name__, "reader")
