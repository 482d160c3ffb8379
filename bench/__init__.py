"""Segue's benchmarks: a synthetic store generator (`bench.generate`) and one measuring command (`bench.run`)."""

import sys

# The bench never leaves __pycache__ in the checkout: its own modules are not cached, and the processes it
# measures keep their bytecode under --cache-dir (PYTHONPYCACHEPREFIX, see bench.run).
sys.dont_write_bytecode = True


def _drop_own_bytecode() -> None:
    """This package's own `__init__` is compiled (and cached) before it can say so: remove that one file."""
    import contextlib
    import os

    cached = globals().get("__cached__")
    if cached and os.path.isfile(cached):
        with contextlib.suppress(OSError):
            os.unlink(cached)
            os.rmdir(os.path.dirname(cached))


_drop_own_bytecode()
