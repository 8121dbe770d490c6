"""Certified optima of generated instances where mixing hardware pays (split `mixing-held-out`:
24-80 rows, 4-10 types drawn from cloud-2026, caps that bind, a floor above what every
hardware reaches alone): the exact cost solver on each instance within 300 s, started from the
generator's mixed witness, its status, cost, bound, time to certificate, plan, and whether the
plan holds two hardware or more. About 1.5 minutes an instance on 2 CPU cores (median; the
open ones take the full 300 s).

    hps run experiments/mixing_optima.py

results.json's `summary.certified_set` is what tests/data/mixing_held_out.json keeps.
"""

from hps.studies.mixing_optima import MixingOptimaConfig


def config() -> MixingOptimaConfig:
    return MixingOptimaConfig(name="mixing_optima", split="mixing-held-out", count=40, seconds=300.0)
