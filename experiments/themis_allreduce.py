"""Themis All-Reduce: utilization of baseline, Themis (FIFO, SCF), round-robin and best-fixed
orders over topologies/networks/, 1 GiB in 64 chunks, and Themis's speed-up over the baseline.

    hps run experiments/themis_allreduce.py

The learned column comes from the collective policy in runs/collective-policy (`hps train
--kind collective --out runs/collective-policy`); when that folder holds none, the run trains
the default collective policy there first (2 minutes on 2 CPU cores). checkpoint=None drops it.
"""

from hps.studies.themis_allreduce import ThemisAllReduceConfig


def config() -> ThemisAllReduceConfig:
    return ThemisAllReduceConfig(
        name="themis_allreduce", size_bytes=2.0**30, chunks=64, checkpoint="runs/collective-policy", train_minutes=2.0
    )
