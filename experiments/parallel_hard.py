"""Hard generated parallel-plan instances (64-256 rows, 8-16 types drawn from cloud-2026, tight
pooled caps, floors near reach; held-out seeds and sizes): every planner against the exact
solver's proven optimum within 60 s, or its certified bound where it proves none, and the solver
warm-started with the sequence search's plan.

    hps run experiments/parallel_hard.py
"""

from hps.experiments.parallel_hard import ParallelHardConfig


def config() -> ParallelHardConfig:
    return ParallelHardConfig(name="parallel_hard", split="held-out", count=60, seconds=60.0, planner_seconds=5.0)
