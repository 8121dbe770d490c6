"""Hard generated parallel-plan instances (64-256 rows, 8-16 types drawn from cloud-2026, tight
pooled caps, floors near reach; held-out seeds and sizes): every planner against the exact
solver's proven optimum within 60 s, or its certified bound where it proves none, and the solver
warm-started with the sequence search's plan. About 2.5 minutes an instance on 2 CPU cores
(120 instances: 5 hours; the solver certifies about 45 % of them within 60 s).

    hps run experiments/parallel_hard.py

Give `checkpoint="runs/placement-policy"` (a policy of `hps train`) to add the policy planner.
"""

from hps.studies.parallel_hard import ParallelHardConfig


def config() -> ParallelHardConfig:
    return ParallelHardConfig(name="parallel_hard", split="held-out", count=120, seconds=60.0, planner_seconds=5.0)
