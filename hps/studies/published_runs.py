"""Published training runs as a test set of the parallel-plan model: each run of
`hps.studies.published_table.RUNS` becomes a plan file (its stages cut between blocks as the
run cut them, its t and d, on the cloud-2026 type of its hardware), scored by the code behind
`hps evaluate --plan`, and its predicted throughput per device is set against the published one.

One item per run. Ratio = predicted / published throughput per device (TFLOP/s or tokens/s, as the
source gives it); `fitted` names the runs the model's fitted constants were fitted to, the others
are held out, and the summary reports the two groups apart.
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass

from hps.costmodel.clocks.base import clock_named
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.files import json_ready
from hps.studies.published_table import RUNS, PublishedRun

CATALOG = "cloud-2026"
GIB = 2.0**30
FITTED: tuple[str, ...] = (
    "mcore-1.7b", "mcore-32b", "mcore-177b", "mcore-462b",
    "titan-8b", "sc21-7.5b", "korthikanti-22b",
    "maxtext-v5p-l2-70b", "maxtext-v6e-l2-70b", "nemo-h100-70b", "nemo-b200-8b", "neuron-trn1-8b",
)  # fmt: skip
"""The runs the kernel clock's constants were fitted to (docs/published-runs.md; the constants are
the catalogues' cloud-2026 and trainium-2022, each with a comment naming its runs); the others are
held out."""


FAMILIES = {"a100-40": "ampere", "a100-80": "ampere", "h100": "hopper", "h200": "hopper", "b200": "blackwell",
            "gb200": "blackwell"}  # fmt: skip
"""The architecture family of each type whose held-out runs give it an error band (the kernel
clock's `kernel_residual_low`/`_high`): a family of at least MIN_HELD_OUT held-out runs."""
MIN_HELD_OUT = 3
"""The fewest held-out runs a family's band is taken from (fewer: the clock's default band)."""


def family_residuals(results: dict[str, dict]) -> dict[str, tuple[float, float, int]]:
    """{family: (least, largest predicted / published − 1, held-out runs)} over the held-out runs
    of `results` (by run key) on FAMILIES' types."""
    by_key = {run.key: run for run in RUNS}
    out: dict[str, list[float]] = {}
    for key, r in results.items():
        family = FAMILIES.get(by_key[key].type)
        if family is not None and key not in FITTED:
            out.setdefault(family, []).append(r["ratio"] - 1)
    return {name: (min(v), max(v), len(v)) for name, v in out.items() if len(v) >= MIN_HELD_OUT}


@dataclass(frozen=True, kw_only=True)
class PublishedRunsConfig(ExperimentConfig):
    """Every published run (or those named), scored as a plan."""

    name: str = "published_runs"
    model: str = "kernel"
    """The clock: "kernel" (the catalogue's fitted constants) or "roofline"."""
    runs: tuple[str, ...] = tuple(run.key for run in RUNS)
    """Keys of `RUNS` to score."""

    def check(self) -> None:
        if self.model not in ("kernel", "roofline"):
            raise ValueError(f"model: must be 'kernel' or 'roofline', got {self.model!r}")
        known = {run.key for run in RUNS}
        unknown = [key for key in self.runs if key not in known]
        if unknown:
            raise ValueError(f"runs: unknown {unknown}; known: {sorted(known)}")


def stage_blocks(run: PublishedRun, blocks: int) -> list[int]:
    """Blocks per pipeline stage: the run's own split, else as even as possible (earlier stages
    one more)."""
    if run.layers_per_stage is not None:
        if sum(run.layers_per_stage) != blocks or len(run.layers_per_stage) != run.pp:
            raise ValueError(f"{run.key}: layers_per_stage must be {run.pp} counts summing to {blocks}")
        return list(run.layers_per_stage)
    base, extra = divmod(blocks, run.pp)
    return [base + (1 if j < extra else 0) for j in range(run.pp)]


def plan_json(run: PublishedRun, rows: int) -> dict:
    """The run's plan file (hps-plan/3) over a decoder table of `rows` rows (embedding, two rows a
    block, head): stage j holds its blocks, the first the embedding, the last the head."""
    blocks = (rows - 2) // 2
    stages, first_block = [], 0
    for j, count in enumerate(stage_blocks(run, blocks)):
        last_block = first_block + count
        first = 0 if j == 0 else 1 + 2 * first_block
        last = rows - 1 if j == run.pp - 1 else 2 * last_block
        stages.append({"first": first, "last": last, "type": run.type, "tp": run.tp, "dp": run.dp})
        first_block = last_block
    return {
        "format": "hps-plan/3",
        "workload": run.workload,
        "catalog": run.catalog,
        "job": {
            "batch": run.batch,
            "micro_batch": run.micro_batch * run.dp,
            "throughput": 1e-6,
            "samples": run.batch * 1000,
            "precision": run.precision,
            "zero": run.zero,
            "recompute": run.recompute,
            "virtual_stages": run.virtual_stages,
            "fp8": run.compute == "fp8",
            "memory_headroom": 0.0,
        },
        "stages": stages,
    }


@functools.cache
def _catalog(name: str = CATALOG):
    from hps.config.loaders import load_catalog
    from hps.config.paths import resolve_topology

    return load_catalog(resolve_topology(name, "catalogs", "published runs"))


def score_run(run: PublishedRun, model: str = "kernel") -> dict:
    """The run's plan scored as `hps evaluate --plan` scores a plan file (parse, check against the
    workload and catalogue, score, report) under the clock `model`, and predicted vs published
    per device."""
    from hps.config.planfile import check_plan_against, parse_plan_file
    from hps.costmodel.parallel.problem import ParallelProblem
    from hps.costmodel.parallel.score import score_plan
    from hps.report.parallel import parallel_report
    from hps.workloads import build_workload

    workload = build_workload(run.workload, **run.overrides)
    if workload.layers[0].name != "embedding" or len(workload.layers) % 2:
        raise ValueError(f"{run.key}: {run.workload} is not a decoder table (embedding, blocks, head)")
    document = plan_json(run, len(workload.layers))
    plan = parse_plan_file(document, run.key)
    catalog = _catalog(run.catalog)
    check_plan_against(plan, workload, catalog, run.key)
    problem = ParallelProblem(workload, catalog, plan.job, clock=clock_named(model))
    report = parallel_report(score_plan(problem, plan.stages))
    units = run.tp * run.pp * run.dp
    tokens = report["throughput"] * run.seq_len / units
    tflops = report["throughput"] * problem.model_flops / units / 1e12
    predicted = tflops if run.metric == "tflops" else tokens
    memory = max(s["memory_per_device_bytes"] for s in report["stages"])
    return json_ready(
        {
            "key": run.key,
            "label": run.label,
            "units": units,
            "published": run.published,
            "metric": run.metric,
            "published_mfu": run.mfu,
            "predicted": predicted,
            "ratio": predicted / run.published,
            "predicted_tokens_per_device": tokens,
            "predicted_tflops_per_device": tflops,
            "mfu": report["mfu"],
            "feasible": report["feasible"],
            "reason": report["reason"],
            "memory_gib": memory / GIB,
            "memory_limit_gib": report["stages"][0]["memory_limit_bytes"] / GIB,
            "iteration_s": report["iteration_s"],
            "plan": document,
            "overrides": run.overrides,
        }
    )


def items(config: PublishedRunsConfig) -> list[tuple[str, PublishedRun]]:
    by_key = {run.key: run for run in RUNS}
    return [(key, by_key[key]) for key in config.runs]


def run_item(config: PublishedRunsConfig, run: PublishedRun) -> dict:
    return score_run(run, config.model)


def group_figures(results: list[dict]) -> dict:
    """Median and largest |ratio − 1| of `results`, and how many are within 15 %."""
    errors = [abs(r["ratio"] - 1) for r in results]
    if not errors:
        return {"runs": 0}
    return {
        "runs": len(errors),
        "median_error": statistics.median(errors),
        "max_error": max(errors),
        "within_15pct": sum(e <= 0.15 for e in errors),
        "median_ratio": statistics.median(r["ratio"] for r in results),
    }


def summarize(config: PublishedRunsConfig, results: dict[str, dict]) -> Summary:
    by_key = {run.key: run for run in RUNS}
    rows = []
    for key, r in results.items():
        run = by_key[key]
        unit = "TFLOP/s" if r["metric"] == "tflops" else "tokens/s"
        rows.append(
            [
                r["label"],
                "fitted" if key in FITTED else "held out",
                f"{run.tp}/{run.pp}/{run.dp}",
                f"{run.micro_batch}/{run.batch}",
                run.seq_len,
                run.compute,
                f"{r['published']:,.1f} {unit}",
                f"{r['predicted']:,.1f}",
                f"{r['ratio']:.3f}",
                "–" if r["published_mfu"] is None else f"{r['published_mfu']:.1%}",
                f"{r['mfu']:.1%}",
                f"{r['memory_gib']:.1f}/{r['memory_limit_gib']:.0f}",
                "yes" if r["feasible"] else r["reason"],
            ]
        )
    fitted = [r for k, r in results.items() if k in FITTED]
    held = [r for k, r in results.items() if k not in FITTED]
    everything = list(results.values())
    groups = {"fitted": group_figures(fitted), "held_out": group_figures(held), "all": group_figures(everything)}
    bands = family_residuals(results)
    lines = [
        f"- {name}: {g['runs']} runs"
        + (
            f", median |ratio − 1| {g['median_error']:.1%}, largest {g['max_error']:.1%}, "
            f"{g['within_15pct']} within 15 %"
            if g["runs"]
            else ""
        )
        for name, g in groups.items()
    ]
    lines += ["", "Held-out residuals (predicted / published − 1) by family, the catalogue's error bands:"]
    lines += [f"- {name}: {low:+.3f} to {high:+.3f} over {n} runs" for name, (low, high, n) in bands.items()]
    sources = [f"- {run.label}: {run.source}, {run.url} ({run.date}); assumed: {run.assumed or '–'}" for run in RUNS]
    return Summary(
        results={"catalog": CATALOG, "runs": results, "groups": groups, "fitted": list(FITTED), "bands": bands},
        headers=[
            "run",
            "group",
            "t/pp/d",
            "mb/batch",
            "seq",
            "compute",
            "published",
            "predicted",
            "ratio",
            "published MFU",
            "MFU",
            "GiB/device",
            "fits",
        ],  # fmt: skip
        rows=rows,
        markdown="\n".join(["Groups:", *lines, "", "Sources:", *sources]),
        title=f"Published training runs against the parallel-plan model ({CATALOG}; trn1: trainium-2022)",
    )


register_experiment_kind(PublishedRunsConfig, items=items, run_item=run_item, summarize=summarize)
