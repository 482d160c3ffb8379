"""Redaction of the short text a listing shows (titles, first requests): one call per session, done once
when the session is summarised, so the listing cache stores redacted text and a warm listing pays nothing.

Two shortcuts, both exact because redaction is a pure function of the text and of the Redactor's state (its
exact values, fixed per process, and the values it has found so far): a title equal to the first request
takes the first request's result when that found no value (the Redactor's state is then a fresh one's), and
a text an earlier session's fresh Redactor left unchanged and learned nothing from is not scanned again
(titles and first requests repeat: "continue", a subagent's fixed prompt). `SEGUE_FAST_PATHS=0` (read with
the environment the shared Redactor reads its exact values from) or `SHORTCUTS = False` scans every text.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from segue import recache
from segue.redact.common import WITHHELD, log
from segue.redact.core import Redactor

if TYPE_CHECKING:
    from segue.model import Session

# Segue's own continuation marker (lineage.MARKER_FORMAT) names a session id, which can look like a token
# (OpenCode's ses_…): it is kept as is so that links between sessions still resolve
_HANDOFF_MARKER_RE = recache.compile(r"\[segue-handoff v1 from=[a-z]{1,20}:[A-Za-z0-9_.-]{1,200}\]")
_SHARED: list[Redactor] = []
SHORTCUTS = True  # False: every title and first request is scanned (the reference the tests compare with)
_CLEAN: dict[str, None] = {}  # texts a fresh scoped Redactor returned unchanged, having learned nothing
_CLEAN_MAX = 4096  # entries, each at most _CLEAN_TEXT characters: a few MB at worst in any process
_CLEAN_TEXT = 1024
_SHORTCUTS: list[bool] = []  # decided with the shared Redactor, from the same environment


def summary_redactor() -> Redactor:
    """One Redactor per process for listings (exact values from this process's environment, read once)."""
    if not _SHARED:
        _SHARED.append(Redactor(remember=False))
        v = os.environ.get("SEGUE_FAST_PATHS")
        _SHORTCUTS.append(not v or v.strip().lower() not in ("0", "off", "false", "no"))
    return _SHARED[0]


# Words most first requests hold (the rules they wake compile their patterns on first use)
_WARM_TEXT = ("Fix the secret token key in src/login.py: the password check fails, define api_key = value, "
              "run it with --token and use it as the password; auth credential pass")


def prepare_for_workers() -> None:
    """Called by a cold listing before it forks its worker processes: the redactor is imported and the
    patterns of the usual rules compiled once, here, and inherited by every worker (each would pay it)."""
    try:
        summary_redactor().scoped().redact(_WARM_TEXT)
        from segue.redact.index import prepare_many

        prepare_many()
    except Exception as exc:  # only a warm-up: the workers redact (and fail closed) on their own
        log.warning("redaction warm-up failed: %s", type(exc).__name__)


def _shortcuts() -> bool:
    return SHORTCUTS and _SHORTCUTS[0]


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
        quick = _shortcuts()
        first = _fresh(r, session.first_request) if quick else _redact_around_markers(r, session.first_request)
        if quick and session.title == session.first_request and not r.learned():
            title = first  # the same text redacted by a Redactor in the same (fresh) state: the same answer
        elif quick and not r.learned():
            title = _fresh(r, session.title)
        else:
            title = _redact_around_markers(r, session.title)
        if first and r.learned():
            first = _redact_around_markers(r, first, known_only=True)
        session.first_request, session.title = first, title
    except Exception as exc:
        log.warning("redaction failed: %s", type(exc).__name__)
        session.first_request = WITHHELD if session.first_request else session.first_request
        session.title = WITHHELD if session.title else session.title
    return session


def _fresh(r: Redactor, text: str | None) -> str | None:
    """`_redact_around_markers(r, text)` for a Redactor that has learned nothing yet, answered from the memo of
    texts such a Redactor left as they were (and filling it)."""
    if not text:
        return text
    if text in _CLEAN:
        return text
    out = _redact_around_markers(r, text)
    if out == text and len(text) <= _CLEAN_TEXT and not r.learned():
        if len(_CLEAN) >= _CLEAN_MAX:
            _CLEAN.clear()
        _CLEAN[text] = None
    return out


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
