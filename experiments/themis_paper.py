"""The Themis paper's All-Reduce study on its own networks (ISCA'22, Table 2 and Fig. 11): baseline,
Themis + FIFO, Themis + SCF, round-robin and the best fixed order on the six 1,024-NPU networks
of topologies/networks/themis-*.toml at 100 MB, 250 MB, 500 MB and 1 GB (MiB, as ASTRA-sim 1.0
reads them) in 64 chunks, at the artifact's 1 ns per link, beside the paper's mean utilizations
(56.31 %, 87.67 %, 95.14 %); and a latency sweep, 1 ns to 10 µs per step, with one and with
four phases in flight per dimension (docs/themis-paper.md).

    hps run experiments/themis_paper.py

The learned column is the default collective policy in runs/collective-policy (`hps train
--kind collective --out runs/collective-policy`), trained on random networks for 6 minutes first
when that folder holds none, then evaluated zero-shot on the six networks.
"""

from hps.studies.themis_paper import ThemisPaperConfig


def config() -> ThemisPaperConfig:
    return ThemisPaperConfig(
        name="themis_paper",
        sizes_mib=(100.0, 250.0, 500.0, 1024.0),
        chunks=64,
        latencies_ns=(1.0, 10.0, 100.0, 1000.0, 10000.0),
        in_flight=4,
        checkpoint="runs/collective-policy",
        train_minutes=6.0,
    )
