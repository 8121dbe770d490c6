"""`hps bench placement`: jitted batched model vs the Python reference, side by side."""

from __future__ import annotations

from hps.cli.common import print_json
from hps.report.tables import format_table


def register(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="benchmark a model against its Python reference")
    parser.add_argument("target", choices=("placement",))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seconds", type=float, default=2.0, help="minimum timing per side")
    parser.set_defaults(run=run)


def run(args) -> int:
    from hps.bench import placement

    result = placement.run(min_seconds=args.seconds)
    if args.json:
        print_json(result)
        return 0
    print(
        f"placement model, {result['layers']} layers x {result['types']} types, "
        f"{result['schedules_per_call']:,} schedules per call, on {result['device']}"
    )
    print(
        format_table(
            ["side", "evaluations_per_s"],
            [["jax (jit, batched)", result["jax_per_s"]], ["python reference", result["reference_per_s"]]],
        )
    )
    print(f"speed-up {result['speedup']:.0f}x   (compile {result['compile_s']:.2f} s, excluded)")
    print(f"exhaustive search over 4^10 schedules: {result['exhaustive_4pow10_s']:.2f} s after compile")
    return 0
