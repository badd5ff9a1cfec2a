"""Benchmarks run by ``make bench``: the numbers that matter, printed, never asserted in tests."""
