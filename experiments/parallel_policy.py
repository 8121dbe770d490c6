"""The default parallel-plan policy (`hps train --kind parallel --out runs/parallel-policy`),
zero-shot on the certified held-out instances kept with the experiments: feasibility, cost over
the proven optimum, and planning time after compile.

    hps run experiments/parallel_policy.py
"""

from hps.studies.parallel_policy import ParallelPolicyConfig


def config() -> ParallelPolicyConfig:
    return ParallelPolicyConfig(name="parallel_policy", checkpoint="runs/parallel-policy", samples=64)
