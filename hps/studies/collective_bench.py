"""`hps bench collective` at several batch sizes in one run, as an experiment: the jitted
simulator's All-Reduces/s beside the plain-Python reference's, with the device and the load,
one item per batch size (hps.bench.collective.run). On an accelerator each group of networks is
one device call (hps.collective.model.batching)."""

from __future__ import annotations

from dataclasses import dataclass

from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind


@dataclass(frozen=True, kw_only=True)
class CollectiveBenchConfig(ExperimentConfig):
    """networks: batch sizes (random networks of 1-4 dimensions); chunks per All-Reduce;
    seconds: the least time each side is timed."""

    name: str = "collective_bench"
    networks: tuple[int, ...] = (1024,)
    chunks: int = 64
    seconds: float = 2.0

    def check(self) -> None:
        from hps.config.limits import MAX_BENCH_NETWORKS

        if max(self.networks) > MAX_BENCH_NETWORKS:
            raise ValueError(f"networks: must be at most {MAX_BENCH_NETWORKS:,}, got {self.networks!r}")
        if self.chunks > 256:
            raise ValueError(f"chunks: must be an integer in 1..256, got {self.chunks!r}")


def items(config: CollectiveBenchConfig):
    return [(f"networks-{n}", n) for n in config.networks]


def run_item(config: CollectiveBenchConfig, networks: int) -> dict:
    from hps.bench.collective import run

    return run(networks=networks, chunks=config.chunks, min_seconds=config.seconds)


def summarize(config: CollectiveBenchConfig, results: dict[str, dict]) -> Summary:
    keys = ("networks", "jax_per_s", "reference_per_s", "speedup", "compile_s", "device", "load_average")
    rows = [[r[k] for k in keys] for r in results.values()]
    return Summary(
        results={"runs": results},
        headers=["networks", "jax_per_s", "reference_per_s", "speedup", "compile_s", "device", "load"],
        rows=rows,
        figures=[],
        markdown=f"All-Reduces of 1 GiB in {config.chunks} chunks (Themis orders, SCF) per second, compile excluded.",
        title="Collective simulator throughput per batch size",
    )


register_experiment_kind(CollectiveBenchConfig, items=items, run_item=run_item, summarize=summarize)
