"""Segue's benchmarks: a synthetic store generator (`bench.generate`) and one measuring command (`bench.run`)."""

import sys

# The bench never leaves __pycache__ in the checkout: its own modules are not cached, and the processes it
# measures keep their bytecode under --cache-dir (PYTHONPYCACHEPREFIX, see bench.run).
sys.dont_write_bytecode = True
