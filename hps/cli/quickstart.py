"""`hps quickstart`: train a small placement policy, compare it with every baseline and the
optimum, plan an unseen workload from its checkpoint and execute the plan (`hps.studies.quickstart`)."""

from __future__ import annotations

import sys

from hps.cli.common import int_range, print_json
from hps.config.limits import MAX_ENVS, UNBOUNDED_CHUNKS
from hps.report.tables import format_table


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "quickstart", help="the whole product in a few minutes: train, compare, plan, execute"
    )
    parser.add_argument("--out", default="runs/quickstart", help="run folder (default: %(default)s)")
    parser.add_argument(
        "--chunks",
        type=int_range(1, UNBOUNDED_CHUNKS),
        default=14,
        help="training chunks of 10 updates (default: %(default)s)",
    )
    parser.add_argument(
        "--envs",
        type=int_range(1, MAX_ENVS, "environments are batched in memory"),
        default=4096,
        help="environments per update (default: %(default)s)",
    )
    parser.add_argument(
        "--workloads",
        default="ctr-dnn,wide-deep,dlrm,matchnet",
        help="zoo workloads compared on cloud-2024 (default: %(default)s)",
    )
    parser.add_argument(
        "--allow-changes",
        action="store_true",
        help="resume a policy in OUT/policy trained with other settings (--envs, …); recorded in its metrics",
    )
    parser.add_argument("--json", action="store_true", help="print the summary JSON instead of tables")
    parser.set_defaults(run=run)


def run(args) -> int:
    from tqdm import tqdm

    from hps.errors import ConfigError
    from hps.studies.quickstart import STEPS, QuickstartConfig, run_quickstart

    if args.chunks < 1 or args.envs < 16 or args.envs % 16:
        raise ConfigError("--chunks/--envs", "quickstart", "need at least 1 chunk and a multiple of 16 environments")
    from hps.config.files import check_output_dir

    check_output_dir(args.out, "--out")
    workloads = tuple(w.strip() for w in args.workloads.split(",") if w.strip())
    if not workloads:
        raise ConfigError("--workloads", "quickstart", "name at least one zoo workload")
    config = QuickstartConfig(out=args.out, train_chunks=args.chunks, num_envs=args.envs, workloads=workloads)
    steps = tqdm(total=len(STEPS), desc="quickstart", unit="step", file=sys.stderr, disable=args.json, position=0)
    chunks = tqdm(
        total=config.train_chunks,
        desc="  train",
        unit="chunk",
        file=sys.stderr,
        disable=args.json,
        position=1,
        leave=False,
    )

    def progress(step: str) -> None:
        if step != STEPS[0]:
            steps.update()
        steps.set_postfix_str(step)

    def on_chunk(record: dict) -> None:
        chunks.update()
        chunks.set_postfix_str(f"reward {record.get('reward', float('nan')):.3f}")

    def on_notice(line: str) -> None:
        tqdm.write(f"hps quickstart: {line}", file=sys.stderr)

    try:
        summary = run_quickstart(
            config, progress, on_chunk, on_notice, command=args.argv, allow_changes=args.allow_changes
        )
        steps.update()
    finally:
        chunks.close()  # before any error message, on a line of its own
        steps.close()
    if args.json:
        print_json(summary)
        return 0
    print(format_summary(summary))
    return 0


def format_summary(summary: dict) -> str:
    """The one table (cost / best found per method and workload), then the unseen workload's
    plan and its execution, then where the files are (texts of `hps.studies.quickstart`)."""
    from hps.studies.quickstart import COMPARISON_CAPTION, comparison_table, timing_line, unseen_lines

    headers, rows = comparison_table(summary["comparisons"])
    training = summary["training"]
    trained_s = (training["last"] or {}).get("elapsed_s", 0.0)
    loaded = "" if summary["chunks_trained_now"] else f", resumed complete in {summary['seconds']['train']:.1f} s"
    lines = [
        f"policy: {training['updates']} updates in {trained_s:.0f} s of training{loaded} "
        f"(checkpoint {summary['files']['checkpoint']})",
        "",
        COMPARISON_CAPTION,
        format_table(headers, rows),
        timing_line(summary["comparisons"]),
        "",
        *unseen_lines(summary["unseen"]),
        "",
        "figures: " + ", ".join(summary["files"][k] for k in ("comparison", "learning_curve")),
        f"summary: {summary['files']['summary']}",
    ]
    return "\n".join(lines)
