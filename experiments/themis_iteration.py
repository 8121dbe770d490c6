"""Themis end-to-end: iteration speed-up of Themis + SCF over the baseline order for ResNet-50
(32 samples per NPU), BERT-base (8) and DLRM's dense part (512) on A100s over
topologies/networks/, 16 chunks per gradient All-Reduce.

    hps run experiments/themis_iteration.py
"""

from hps.studies.themis_iteration import ThemisIterationConfig


def config() -> ThemisIterationConfig:
    return ThemisIterationConfig(
        name="themis_iteration",
        workloads=(("resnet50", 32.0), ("bert-base", 8.0), ("dlrm", 512.0)),
        catalog="cloud-2024",
        resource="a100",
        chunks=16,
        policy="themis",
    )
