"""The collective simulator's All-Reduces/s at 1,024 and 16,384 random networks × 64 chunks, the
figure to take on an accelerator (where each group of networks is one device call), beside the
plain-Python reference in the same run.

    hps run experiments/collective_bench_device.py
"""

from hps.studies.collective_bench import CollectiveBenchConfig


def config() -> CollectiveBenchConfig:
    return CollectiveBenchConfig(name="collective_bench_device", networks=(1024, 16384), chunks=64, seconds=2.0)
