"""Segue's benchmarks: a synthetic store generator (`bench.generate`) and one measuring command (`bench.run`)."""
