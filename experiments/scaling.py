"""Scaling: env steps/s of the placement environment vs environments and layers, of training
updates vs environments, and All-Reduces/s of the collective simulator vs chunks (log-log).
About 2–3 minutes on 2 CPU cores on a first run (most of it compiling; `hps run` keeps JAX's
compilation cache, so a rerun is quicker). The rates are measurements: they vary between runs.

    hps run experiments/scaling.py
"""

from hps.studies.scaling import ScalingConfig


def config() -> ScalingConfig:
    return ScalingConfig(
        name="scaling",
        envs=(256, 1024, 4096),
        layers=(4, 8, 16, 32),
        base_envs=1024,
        base_layers=16,
        train_envs=(256, 1024),
        train_layers=8,
        chunks=(4, 16, 64, 256),
        networks=256,
        network_dims=3,
    )
