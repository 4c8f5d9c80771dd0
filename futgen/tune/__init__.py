"""Tuning: the threshold forest (`forest.py`), `futgen bench` (`bench.py`)
and `futgen autotune` (`autotune.py`)."""

NOISE = 0.03  # times within 3% of each other are a tie (`futgen autotune --noise`)
