"""Domain errors: one base class carrying a reason code and details, shared by the CLI (message on stderr,
exit 1, or exit 2 for `invalid_params`) and the language server (its own JSON-RPC error code, `data.reason`
and the details in `data`).

The subclasses live next to what raises them (`listing.SessionNotFound`, `tokens.TokenError`,
`resume.PlanRefused`, `paths.UnsafeDirectory`, `search.QueryError`, …). This module imports nothing of
Segue's, so any module may import it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a CLI query imports this module
if TYPE_CHECKING:
    from typing import Any

INVALID_PARAMS = "invalid_params"  # the reason of a usage error: CLI exit 2, JSON-RPC -32602


class SegueError(Exception):
    """A failure meant for people: `reason` is a stable code (the wire's `data.reason`), `data` its details."""

    reason: str = "internal"

    def __init__(self, message: str, *, reason: str | None = None, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason
        self.data: dict[str, Any] = dict(data or {})


class InvalidArgument(SegueError):
    """An argument outside what the service accepts (a usage error on either surface)."""

    reason = INVALID_PARAMS


def classify(e: BaseException) -> tuple[str, str, dict[str, Any]] | None:
    """(reason, message, data) for a domain error, None for anything else (a bug)."""
    if isinstance(e, SegueError):
        return e.reason, str(e), dict(e.data)
    if isinstance(e, PermissionError):
        return "permission_denied", f"permission denied: {e}", {}
    return None


def describe(e: BaseException) -> str | None:
    c = classify(e)
    return c[1] if c else None
