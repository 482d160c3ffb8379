"""Redaction of the short text a listing shows (titles, first requests): one call per session, done once
when the session is summarised, so the listing cache stores redacted text and a warm listing pays nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from segue.redact.common import WITHHELD
from segue.redact.core import Redactor

if TYPE_CHECKING:
    from segue.model import Session

log = logging.getLogger("segue.redact")
_SHARED: list[Redactor] = []


def summary_redactor() -> Redactor:
    """One Redactor per process for listings (exact values from this process's environment, read once)."""
    if not _SHARED:
        _SHARED.append(Redactor(remember=False))
    return _SHARED[0]


def redact_text(text: str | None) -> str | None:
    """Session text with secrets replaced; None stays None. Fails closed: on an error the text is withheld."""
    if not text:
        return text
    try:
        return summary_redactor().redact(text)[0]
    except Exception as exc:  # never echo the text
        log.warning("redaction failed: %s", type(exc).__name__)
        return WITHHELD


def redact_summary(session: Session) -> Session:
    """Redact a session's title and first request in place (and return it). A value found in one is
    redacted in the other too (a password typed in the first request and repeated in the title)."""
    try:
        r = summary_redactor().scoped()
        first = r.redact(session.first_request)[0] if session.first_request else session.first_request
        title = r.redact(session.title)[0] if session.title else session.title
        if first and r.learned():
            first = r.redact_known(first)[0]
        session.first_request, session.title = first, title
    except Exception as exc:
        log.warning("redaction failed: %s", type(exc).__name__)
        session.first_request = WITHHELD if session.first_request else session.first_request
        session.title = WITHHELD if session.title else session.title
    return session
