"""Published training runs (Megatron-Core on H100, Meta's Llama 3 405B, torchtitan on A100, MaxText
on TPU v5p and v6e, NVIDIA's NeMo recipes on H100, B200 and GB200) as plan files scored by the
parallel-plan model's kernel-level time model at its fitted constants (docs/published-runs.md;
`model="roofline"` scores them by the catalogue's roofline): predicted vs published throughput per
device, MFU and memory per device, fitted and held-out runs apart.

    hps run experiments/published_runs.py
"""

from hps.studies.published_runs import PublishedRunsConfig


def config() -> PublishedRunsConfig:
    return PublishedRunsConfig(name="published_runs")
