"""Freed heap given back to the system in a long-lived process (the language server).

A pass over the stores frees many blocks larger than pymalloc's (index rows, JSON texts) in the middle of the
heap; glibc keeps them mapped, so the server's resident size stays at its peak although Python holds far less.
`malloc_trim` returns those pages (measured at 32,000 sessions: bench/NOTES-warm.md, stops 41-42). Elsewhere
(musl, macOS, Windows) there is nothing to call, and nothing happens.
"""

from __future__ import annotations

import sys
from typing import Any

_trim: Any = None  # the C function once looked up; False: not available here


def give_back() -> bool:
    """Return freed heap pages to the system; True when the C library has the call (glibc), whether or not
    there was anything to return. Never raises."""
    global _trim
    if _trim is None:
        _trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                libc = ctypes.CDLL(None)
                fn = libc.malloc_trim  # glibc only: musl has no such symbol
                fn.argtypes = [ctypes.c_size_t]
                fn.restype = ctypes.c_int
                _trim = fn
            except (OSError, AttributeError, ImportError):
                _trim = False
    if _trim is False:
        return False
    try:
        _trim(0)  # (its result says whether any page went back: nothing the caller acts on)
        return True
    except Exception:
        return False
