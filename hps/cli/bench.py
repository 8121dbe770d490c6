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


def run(args) -> int:
    if args.target == "collective":
        return run_collective(args)
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


def run_collective(args) -> int:
    from hps.bench import collective

    result = collective.run(min_seconds=args.seconds)
    if args.json:
        print_json(result)
        return 0
    print(
        f"collective simulator, {result['networks']:,} random networks x {result['chunks']} chunks "
        f"(themis orders, SCF), on {result['device']}"
    )
    rows = [["jax (jit, vmap)", result["jax_per_s"]], ["python reference", result["reference_per_s"]]]
    print(format_table(["side", "collectives_per_s"], rows))
    print(f"speed-up {result['speedup']:.1f}x   (compile {result['compile_s']:.2f} s, excluded)")
    return 0
