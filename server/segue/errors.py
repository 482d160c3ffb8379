"""Domain errors in one place: each has a reason code shared by the CLI (message, exit 1) and the language
server (its own JSON-RPC error code with `data.reason`)."""

from __future__ import annotations

from typing import Any


def classify(e: BaseException) -> tuple[str, str, dict[str, Any]] | None:
    """(reason, message, data) for a domain error, None for anything else (a bug)."""
    from segue.listing import AmbiguousSession, SessionNotFound
    from segue.paths import UnsafeDirectory
    from segue.resume import PlanRefused
    from segue.tokens import TokenError

    if isinstance(e, AmbiguousSession):
        return "ambiguous_session", str(e), {"candidates": [s.ref for s in e.candidates[:20]]}
    if isinstance(e, SessionNotFound):
        return "unknown_session", str(e), {"ref": e.ref}
    if isinstance(e, TokenError):
        return e.reason, str(e), {}
    if isinstance(e, PlanRefused):
        return e.reason, str(e), dict(e.data)
    if isinstance(e, UnsafeDirectory):
        return "unsafe_directory", str(e), {}
    if isinstance(e, PermissionError):
        return "permission_denied", f"permission denied: {e}", {}
    return None


def describe(e: BaseException) -> str | None:
    c = classify(e)
    return c[1] if c else None
