"""Times: the JSON contract's ISO 8601 form and what the stores hold, apart from segue.model so a CLI query
(its JSON, its --since) needs neither the model nor dataclasses."""

from __future__ import annotations

import time
from datetime import datetime, timezone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def iso(ts: float | None) -> str | None:
    """Epoch seconds -> ISO 8601 UTC with milliseconds and `Z` (the JSON contract)."""
    if ts is None:
        return None
    ms = round(ts * 1000)
    secs, milli = divmod(ms, 1000)
    try:
        t = time.gmtime(secs)
    except (OverflowError, OSError, ValueError):
        return None
    return (f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            f".{milli:03d}Z")


def parse_time(value: Any) -> float | None:
    """Accept what the stores hold (ISO strings, epoch s or ms) and return epoch seconds, or None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        v = float(value)
        if v > 1e14:  # microseconds
            return v / 1e6
        if v > 1e11:  # milliseconds
            return v / 1e3
        return v if v > 0 else None
    if isinstance(value, str) and value:
        s = value.strip()
        if s.isdigit():
            return parse_time(int(s))
        if s.endswith("Z"):
            s = s[:-1] + "+00:00"
        try:
            dt = datetime.fromisoformat(s)
        except ValueError:
            return None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        return dt.timestamp()
    return None
