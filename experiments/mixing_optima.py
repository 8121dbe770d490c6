"""Certified optima of generated instances where mixing hardware pays (split `mixing-held-out`:
24-80 rows, 4-10 types drawn from cloud-2026, caps that bind, a floor above what every
hardware reaches alone): the exact cost solver on each instance within 300 s, started from the
generator's mixed witness, its status, cost, bound, time to certificate, plan, and whether the
plan holds two hardware or more. 36 instances: 68 minutes on 2 shared CPU cores (load about 4):
25 certified (median 3.5 s, p90 60 s), the 11 others held the full 300 s.

    hps run experiments/mixing_optima.py

results.json's `summary.certified_set` is what tests/data/mixing_held_out.json keeps.
"""

from hps.studies.mixing_optima import MixingOptimaConfig


def config() -> MixingOptimaConfig:
    return MixingOptimaConfig(name="mixing_optima", split="mixing-held-out", count=36, seconds=300.0)
