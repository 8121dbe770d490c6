"""HeterPS across the zoo: the learned placement policy vs single-type, greedy, random, genetic
and exhaustive placement on cloud-2024 at five throughput floors per workload
(0.5x to 8x its default).

    hps run experiments/heterps_zoo.py

Uses the placement policy in runs/placement-policy (`hps train --minutes 10` writes it there);
when that folder holds none, the run trains it first (10 minutes on 2 CPU cores).
"""

from hps.studies.heterps_zoo import HeterpsZooConfig


def config() -> HeterpsZooConfig:
    return HeterpsZooConfig(name="heterps_zoo", catalog="cloud-2024", floor_scales=(0.5, 1.0, 2.0, 4.0, 8.0))
