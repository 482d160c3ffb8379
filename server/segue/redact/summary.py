"""Redaction of the short text a listing shows (titles, first requests): one call per session, done once
when the session is summarised, so the listing cache stores redacted text and a warm listing pays nothing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from segue.redact.common import WITHHELD, log
from segue.redact.core import Redactor

if TYPE_CHECKING:
    from segue.model import Session

# Segue's own continuation marker (lineage.MARKER_FORMAT) names a session id, which can look like a token
# (OpenCode's ses_…): it is kept as is so that links between sessions still resolve
_HANDOFF_MARKER_RE = re.compile(r"\[segue-handoff v1 from=[a-z]{1,20}:[A-Za-z0-9_.-]{1,200}\]")
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
        first = _redact_around_markers(r, session.first_request)
        title = _redact_around_markers(r, session.title)
        if first and r.learned():
            first = _redact_around_markers(r, first, known_only=True)
        session.first_request, session.title = first, title
    except Exception as exc:
        log.warning("redaction failed: %s", type(exc).__name__)
        session.first_request = WITHHELD if session.first_request else session.first_request
        session.title = WITHHELD if session.title else session.title
    return session


def _redact_around_markers(r: Redactor, text: str | None, known_only: bool = False) -> str | None:
    if not text:
        return text
    run = r.redact_known if known_only else r.redact
    if "[segue-handoff" not in text:
        return run(text)[0]
    out, pos = [], 0
    for m in _HANDOFF_MARKER_RE.finditer(text):
        out += [run(text[pos : m.start()])[0] if m.start() > pos else "", m.group()]
        pos = m.end()
    out.append(run(text[pos:])[0] if pos < len(text) else "")
    return "".join(out)
