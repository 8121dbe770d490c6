"""`hps bench placement|collective`: jitted batched model vs the Python reference, side by side."""

from __future__ import annotations

from hps.cli.common import print_json
from hps.report.tables import format_table


def register(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="benchmark a model against its Python reference")
    parser.add_argument("target", choices=("placement", "collective"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum timing per side")
    parser.set_defaults(run=run)


def _sides(result: dict, jax_label: str, unit: str) -> str:
    rows = [[jax_label, result["jax_per_s"]], ["python reference", result["reference_per_s"]]]
    table = format_table(["side", f"{unit}_per_s"], rows)
    return f"{table}\nspeed-up {result['speedup']:.1f}x   (compile {result['compile_s']:.2f} s, excluded)"


def run(args) -> int:
    from hps.bench import collective, placement

    result = (placement if args.target == "placement" else collective).run(min_seconds=args.seconds)
    if args.json:
        print_json(result)
    elif args.target == "placement":
        print(
            f"placement model, {result['layers']} layers x {result['types']} types, "
            f"{result['schedules_per_call']:,} schedules per call, on {result['device']}"
        )
        print(_sides(result, "jax (jit, batched)", "evaluations"))
        print(f"exhaustive search over 4^10 schedules: {result['exhaustive_4pow10_s']:.2f} s after compile")
    else:
        print(
            f"collective simulator, {result['networks']:,} random networks x {result['chunks']} chunks "
            f"(themis orders, SCF), on {result['device']}; jax on {result['threads']} threads, "
            "the reference on one"
        )
        print(_sides(result, "jax (jit, vmap)", "collectives"))
    return 0
