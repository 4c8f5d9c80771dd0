"""Tuning: the threshold forest of a package (`forest`); the autotuner comes next (issue 10)."""
