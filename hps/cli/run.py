"""`hps run EXPERIMENT.py`: run an experiment config module into <out>/<name>/ (results.json,
figures, report.md, manifest.json), resuming from the items a killed run saved; prints the table.
The folder is locked while the run writes it: a second run into it exits 2 at once, naming the first."""

from __future__ import annotations

import argparse
from pathlib import Path

from hps.cli.common import print_json
from hps.config.files import check_output_dir
from hps.report.tables import format_table

KIND_DESCRIPTIONS = {
    "CollectiveBenchConfig": (
        "hps.studies.collective_bench",
        "collective simulator All-Reduces/s vs the Python reference at several batch sizes, with the device",
    ),
    "CollectivePolicyConfig": (
        "hps.studies.collective_policy",
        "train a collective policy, compare it with Themis on held-out networks and the suite",
    ),
    "DeviceCheckConfig": (
        "hps.studies.device_check",
        "the quickstart and the executor's check on every model workload, with step times, on this machine",
    ),
    "ExecutorCalibrationConfig": (
        "hps.studies.executor_calibration",
        "cost model error on executed plans, roofline vs profiled layer times",
    ),
    "GeneralizationConfig": (
        "hps.studies.generalization",
        "one placement policy on unseen workloads and catalogues vs per-instance search",
    ),
    "HeterpsZooConfig": (
        "hps.studies.heterps_zoo",
        "the placement policy vs every search method over the zoo at several throughput floors",
    ),
    "LlmPlansConfig": (
        "hps.studies.llm_plans",
        "large language models on a catalogue at several floors: the exact optimum and its Pareto front",
    ),
    "MixingOptimaConfig": (
        "hps.studies.mixing_optima",
        "generated instances where mixing hardware pays: the exact solver's certified optima and how many mix",
    ),
    "ParallelHardConfig": (
        "hps.studies.parallel_hard",
        "generated parallel-plan instances: every planner vs the proven optimum or bound, and the warm start",
    ),
    "ParallelPolicyConfig": (
        "hps.studies.parallel_policy",
        "a parallel-plan policy zero-shot on certified held-out instances: cost over the proven optimum",
    ),
    "ProfileCheckConfig": (
        "hps.studies.profile_check",
        "a transformer stage predicted with and without a measured profile, then executed",
    ),
    "PlacementAtScaleConfig": (
        "hps.studies.placement_at_scale",
        "a placement checkpoint zero-shot on generated instances of hundreds of layers vs the exact optimum",
    ),
    "PlacementPolicyConfig": (
        "hps.studies.placement_policy",
        "placement checkpoints vs the optimum, the GA and the gradient search on held-out instances",
    ),
    "QuickstartConfig": (
        "hps.studies.quickstart",
        "what `hps quickstart` runs: train, compare, plan and execute an unseen workload",
    ),
    "ScalingConfig": (
        "hps.studies.scaling",
        "env steps/s and All-Reduces/s vs environments, layers and chunks (log-log)",
    ),
    "PublishedRunsConfig": (
        "hps.studies.published_runs",
        "published training runs scored as plan files: predicted against published throughput per device",
    ),
    "ThemisAllReduceConfig": (
        "hps.studies.themis_allreduce",
        "All-Reduce utilization of every collective policy over the topology suite",
    ),
    "ThemisEndToEndConfig": (
        "hps.studies.themis_end_to_end",
        "ASTRA-sim 1.0 workloads on the Themis paper's networks: iteration speed-up of Themis beside the paper's",
    ),
    "ThemisIterationConfig": (
        "hps.studies.themis_iteration",
        "training-iteration speed-up of Themis + SCF over the baseline order",
    ),
    "ThemisPaperConfig": (
        "hps.studies.themis_paper",
        "every collective policy on the Themis paper's six networks beside its Fig. 11 means; a latency sweep",
    ),
}
"""The experiment kinds `hps run` knows: config type -> (module, what it does), for --help
without importing them (a test checks it against the registered kinds)."""


def kinds_epilog() -> str:
    width = max(map(len, KIND_DESCRIPTIONS))
    lines = [f"  {name:<{width}}  {text}" for name, (_, text) in KIND_DESCRIPTIONS.items()]
    return (
        "experiment kinds (the config types config() may return; experiments/ has one file of each):\n"
        + "\n".join(lines)
        + "\n\nimport each from its module, e.g. from hps.studies.scaling import ScalingConfig"
    )


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run an experiment file (resumes a killed run)",
        description=__doc__,
        epilog=kinds_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "experiment",
        help="Python file defining config() (see experiments/); it is executed as Python with your "
        "permissions, so give only files you trust",
    )
    parser.add_argument("--out", default="results", help="results folder; the run goes to OUT/NAME (default: results)")
    parser.add_argument("--fresh", action="store_true", help="recompute every item instead of resuming")
    parser.add_argument("--json", action="store_true", help="print results.json instead of the table")
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.studies import load_config, run_experiment

    config = load_config(args.experiment)
    out = check_output_dir(Path(args.out) / config.name, "--out")
    ran = run_experiment(
        config, out, fresh=args.fresh, progress=not args.json, source=args.experiment, command=args.argv
    )
    if args.json:
        print_json(ran["results"])
        return 0
    print(format_table(ran["headers"], ran["rows"]))
    print()
    for path in ran["files"]:
        print(f"wrote {path}")
    return 0
