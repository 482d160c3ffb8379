"""The cyclic garbage collector, paused around work that makes many objects at once and keeps them (or exits
soon after): collecting meanwhile only scans them again and again. Measured figures: bench/NOTES-warm.md, stop 26.
Imported by the quick answers before anything else: the standard library's `gc` and `contextlib` only."""

from __future__ import annotations

import contextlib
import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def paused(when: bool = True, freeze: bool = False) -> Iterator[None]:
    """No automatic collection inside (`when` False: leave it as it is); `freeze`: what exists at the end is left
    out of every later collection (objects that live as long as the process). On again after, as it was before,
    however the block ends."""
    was = gc.isenabled()
    if when:
        gc.disable()
    try:
        yield
    finally:
        if freeze:
            gc.freeze()
        if was:
            gc.enable()
