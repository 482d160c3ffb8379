"""Markers, constants and the window sizes every part of the redactor shares."""

from __future__ import annotations

import os
import re

from segue import recache


class _Log:
    """``logging.getLogger("segue.redact")``, loaded when first written to: logging costs ~5 ms of import, paid
    by every listing that redacts (issue 16), and the redactor only logs when it fails."""

    def warning(self, msg: str, *args: object) -> None:
        import logging

        logging.getLogger("segue.redact").warning(msg, *args)


log = _Log()

MARKER_RE = recache.compile(r"\[REDACTED:[a-z0-9-]{1,64}\]")
WITHHELD = "[withheld: redaction failed]"
HANDOFF_TOKEN_RE = recache.compile(r"(?<![A-Za-z0-9])h_[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")
# the same matches with the literal first: sre then skips straight to each "h_" (~10x faster scans)
_HANDOFF_SCAN_RE = recache.compile(r"h_(?<![A-Za-z0-9]h_)[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")

_ENV_NAME_RE = recache.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL", re.I)
_MIN_EXACT = 8
_WINDOW, _OVERLAP = 8192, 1024  # long texts: windows overlapping by more than any bounded match
_CONTEXT = 8192  # excerpt(): context redacted beyond the cut

# SEGUE_FAST_PATHS=0: the redactor's newer fast paths (index.py, generic.py) take their plain formulations
# (tests/test_redact_fastpaths.py checks they give the same answers)
FAST_PATHS = os.environ.get("SEGUE_FAST_PATHS", "1").strip().lower() not in ("0", "off", "false", "no")
