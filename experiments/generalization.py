"""Generalization: one placement policy reused through its checkpoint on zoo workloads and
shipped catalogues it never saw, against per-instance search in cost and planning time.

    hps run experiments/generalization.py

Uses the placement policy in runs/placement-policy (trained there first when it holds none).
"""

from hps.studies.generalization import GeneralizationConfig


def config() -> GeneralizationConfig:
    return GeneralizationConfig(name="generalization", catalogs=("cloud-2024", "small"))
