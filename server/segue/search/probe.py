"""The search side of segue.probe: what discovery looked at, replayed by a CLI query (segue.search.fast).
Set SEGUE_SEARCH_PROBE=0 to never use one."""

from __future__ import annotations

import os

from segue.probe import _STAT, READ_MAX, Recording, env_digest, recording, unchanged

__all__ = ["READ_MAX", "_STAT", "Recording", "enabled", "env_digest", "recording", "unchanged"]


def enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_PROBE", "1") != "0"
