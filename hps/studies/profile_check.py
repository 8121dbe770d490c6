"""Profile check: a transformer stage's predicted time with and without a measured profile, against
the same stage executed on the devices (`hps profile`, `hps evaluate --plan`, `hps execute`, as
library calls).

One item per width: the zoo "transformer" at that width (FFN 4× wide, heads of 64) becomes one
pipeline stage of all its layers on `replicas` devices of the catalogue type `type`, running
`micro_batches` micro-batches of the global batch. Each layer is profiled
(`hps.executor.profile.profile_passes`) at the stage's own micro-batch per device and at twice it;
the parallel-plan model (`ParallelProblem.layer_times`) predicts the stage's compute per iteration
(micro_batches × its time per micro-batch) from the catalogue's roofline and from the profile; the
executor runs the plan and measures the stage's forward and backward over the same micro-batches
(`hps.executor.measure`). Error = measured / predicted − 1. The times are measurements: results
vary between runs and machines.
"""

from __future__ import annotations

from dataclasses import dataclass

from hps.errors import ConfigError
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind


@dataclass(frozen=True, kw_only=True)
class ProfileCheckConfig(ExperimentConfig):
    """widths: transformer widths, one item each; layers, seq_len: the transformer's depth and
    sequence; batch: global batch (sequences); micro_batches: per iteration; replicas: devices of
    the stage (data-parallel); type: the catalogue type the devices are taken as (its roofline is
    the unprofiled prediction); catalog: shipped name or file; repeats: measurements per profiled
    layer (the median is kept); sizes: the micro-batches profiled, as multiples of the stage's
    own (profiled last; 2 beside 1 brackets the stage for interpolation)."""

    name: str = "profile_check"
    widths: tuple[int, ...] = (256, 1024)
    layers: int = 4
    seq_len: int = 128
    batch: int = 256
    micro_batches: int = 2
    replicas: int = 1
    type: str = "h200"
    catalog: str = "cloud-2026"
    repeats: int = 5
    sizes: tuple[int, ...] = (2, 1)

    def check(self) -> None:
        if self.batch % (self.micro_batches * self.replicas):
            raise ValueError(
                f"batch: {self.batch} does not split into {self.micro_batches} micro-batches "
                f"over {self.replicas} replicas"
            )
        if any(w % 64 for w in self.widths):
            raise ValueError(f"widths: must be multiples of 64 (heads of 64), got {self.widths!r}")
        if not self.sizes or self.sizes[-1] != 1 or any(not isinstance(f, int) or f < 1 for f in self.sizes):
            raise ValueError(f"sizes: positive integers ending with 1 (the stage's own), got {self.sizes!r}")


def _catalog(config: ProfileCheckConfig):
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology

    catalog = load_catalog(resolve_topology(config.catalog, "catalogs", "catalog"))
    if config.type not in catalog.names:
        raise ConfigError(
            "config()", "type", f"{config.type!r} is not in {config.catalog} ({', '.join(catalog.names)})"
        )
    return catalog


def _devices(config: ProfileCheckConfig) -> str:
    """The --devices mapping: the first `replicas` devices as `type`."""
    import jax

    if len(jax.devices()) < config.replicas:
        raise ConfigError("config()", "replicas", f"{config.replicas} devices asked, {len(jax.devices())} present")
    return f"{config.type}=0-{config.replicas - 1}" if config.replicas > 1 else f"{config.type}=0"


def items(config: ProfileCheckConfig):
    _catalog(config)
    _devices(config)
    return [(f"w{width}", width) for width in config.widths]


def _overrides(config: ProfileCheckConfig, width: int) -> dict:
    return dict(layers=config.layers, hidden=width, heads=width // 64, ffn=4 * width, seq_len=config.seq_len)


def predicted_compute(workload, catalog, config: ProfileCheckConfig) -> tuple[float, str]:
    """(seconds of the stage's forwards and backwards per iteration, where its layer times come
    from) under the parallel-plan model."""
    from hps.config.types import Job, ParallelStage
    from hps.costmodel.parallel.problem import ParallelProblem
    from hps.costmodel.parallel.score import score_plan

    b = config.batch // config.micro_batches
    job = Job(batch=float(config.batch), throughput=1e-6, samples=float(config.batch), micro_batch=b)
    problem = ParallelProblem(workload, catalog, job)
    stage = ParallelStage(0, len(workload.layers) - 1, config.type, 1, config.replicas)
    score = score_plan(problem, (stage,), b).stages[0]
    return score.time_per_microbatch_s * config.micro_batches, score.time_source


def run_item(config: ProfileCheckConfig, width: int) -> dict:
    import jax

    from hps.config.types import Job
    from hps.executor.devices import device_pools
    from hps.executor.plan import ExecuteOptions, execute_schedule
    from hps.executor.profile import profile_passes, with_profiles
    from hps.models.registry import build_model_and_workload

    catalog = _catalog(config)
    devices = _devices(config)
    model, workload = build_model_and_workload("transformer", _overrides(config, width), seed=config.seed)
    pools = device_pools(catalog, [config.type], devices)
    b = config.batch // config.micro_batches
    profiled = workload
    for size in (f * b for f in config.sizes):  # the stage's own micro-batch last: its per-sample table is kept
        micro = max(1, config.batch // size)
        passes = profile_passes(model, pools, size, repeats=config.repeats, seed=config.seed, micro_batches=micro)
        profiled = with_profiles(profiled, passes)
    roofline_s, _ = predicted_compute(workload, catalog, config)
    profile_s, source = predicted_compute(profiled, catalog, config)
    job = Job(batch=float(config.batch), throughput=1e-6, samples=float(config.batch))
    options = ExecuteOptions(
        devices=devices, seed=config.seed, replicas=(config.replicas,), micro_batches=config.micro_batches, steps=2
    )
    schedule = [catalog.index(config.type)] * len(workload.layers)
    report = execute_schedule(model, workload, catalog, job, schedule, options)
    measured_s = report["stages"][0]["measured"]["compute"]
    return {
        "width": width,
        "device": str(jax.devices()[0].device_kind),
        "per_device_micro_batch": b // config.replicas,
        "measured_ms": measured_s * 1e3,
        "roofline_ms": roofline_s * 1e3,
        "profiled_ms": profile_s * 1e3,
        "roofline_error": measured_s / roofline_s - 1,
        "profiled_error": measured_s / profile_s - 1,
        "time_source": source,
    }


def summarize(config: ProfileCheckConfig, results: dict[str, dict]) -> Summary:
    rows = [
        [
            r["width"], r["device"], r["per_device_micro_batch"], f"{r['measured_ms']:.2f}", f"{r['roofline_ms']:.3f}",
            f"{r['roofline_error']:+.0%}", f"{r['profiled_ms']:.2f}", f"{r['profiled_error']:+.1%}", r["time_source"],
        ]
        for r in results.values()
    ]  # fmt: skip
    text = (
        f"The zoo transformer ({config.layers} layers, sequence {config.seq_len}, FFN 4× the width) as one stage on "
        f"{config.replicas} device(s) taken as {config.catalog}'s {config.type}, batch {config.batch} in "
        f"{config.micro_batches} micro-batches; compute per iteration (forwards + backwards). Error = measured / "
        "predicted − 1."
    )
    return Summary(
        results={"items": results},
        headers=[
            "width",
            "device",
            "mb/device",
            "measured ms",
            "roofline ms",
            "roofline error",
            "profiled ms",
            "profiled error",
            "times",
        ],  # fmt: skip
        rows=rows,
        markdown=text,
        title="Profile check: a transformer stage predicted with and without a profile, and executed",
    )


register_experiment_kind(ProfileCheckConfig, items=items, run_item=run_item, summarize=summarize)
