"""Themis All-Reduce: utilization of baseline, Themis (FIFO, SCF), round-robin and best-fixed
orders over topologies/networks/, 1 GiB in 64 chunks, and Themis's speed-up over the baseline.

    hps run experiments/themis_allreduce.py

Set checkpoint= to a trained collective policy's run folder (hps train --kind collective) to add
the learned policy's column.
"""

from hps.experiments.themis_allreduce import ThemisAllReduceConfig


def config() -> ThemisAllReduceConfig:
    return ThemisAllReduceConfig(name="themis_allreduce", size_bytes=2.0**30, chunks=64, checkpoint=None)
