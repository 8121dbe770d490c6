"""The Themis paper end to end (docs/themis-paper.md, "End to end"): ASTRA-sim 1.0's workload
files (tests/data/astra-sim-1.0/: ResNet-50, the hybrid-parallel Transformer, DLRM, two MLPs)
at the artifact's comm scales 100, 150 and 200 and compute scale 0.26 on the paper's six Table 2
networks, baseline order + FIFO vs Themis + SCF, iteration time and speed-up per workload and
network beside the paper's mean speed-ups. About three minutes on 2 CPU cores.

    hps run experiments/themis_end_to_end.py
"""

from hps.studies.themis_end_to_end import ThemisEndToEndConfig


def config() -> ThemisEndToEndConfig:
    return ThemisEndToEndConfig(name="themis_end_to_end", comm_scales=(100.0, 150.0, 200.0), chunks=16)
