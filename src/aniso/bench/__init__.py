"""Benchmarks of the suite's computations against their lower bounds and their peers, callable from code, the
command line and ``benchmarks/`` alike (so all three measure the same thing)."""
