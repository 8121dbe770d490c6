"""`hps bench placement|collective|rl|parallel|parallel-score|parallel-certify`: jitted batched
models vs their Python references, side by side; `rl`: env steps per second of the RL loop (env
alone, policy rollouts, training updates); `parallel`: the parallel-plan exact solver on synthetic
layers x types; `parallel-score`: parallel-plan scores per second, the batched JAX scorer vs
numpy's score_plan; `parallel-certify`: the exact solver's cold time to certificate on generated
held-out instances, this checkout against a git revision."""

from __future__ import annotations

import dataclasses
import math

from hps.cli.common import float_range, int_range, print_json
from hps.config.limits import MAX_BENCH_NETWORKS, MAX_BENCH_SECONDS, MAX_CATALOG_TYPES, MAX_WORKLOAD_LAYERS
from hps.config.machine import load_average
from hps.errors import ConfigError
from hps.report.tables import format_table


def register(subparsers) -> None:
    parser = subparsers.add_parser("bench", help="benchmark a model against its Python reference")
    parser.add_argument(
        "target", choices=("placement", "collective", "rl", "parallel", "parallel-score", "parallel-certify")
    )
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--seconds",
        type=float_range(0.01, MAX_BENCH_SECONDS, "a benchmark times each side for this long"),
        default=2.0,
        help="minimum timing per side (default: %(default)s)",
    )
    parser.add_argument(
        "--networks",
        type=int_range(1, MAX_BENCH_NETWORKS, "collective: random networks simulated per batch"),
        default=1024,
        help="collective: random networks in the batch (default: %(default)s)",
    )
    parser.add_argument(
        "--exact-layers",
        default="64,256,1024,4096",
        help="placement: layer counts the exact solver is timed at, 16 types (default: %(default)s)",
    )
    parser.add_argument(
        "--rl-setting",
        choices=("default", "large", "both"),
        default="both",
        help="rl: 4,096 envs x 16 layers x 4 types, 1,024 envs x 256 layers x 16 types, or both (default: %(default)s)",
    )
    parser.add_argument(
        "--exact-types", default="4,8,16,32", help="placement: type counts, 256 layers (default: %(default)s)"
    )
    parser.add_argument(
        "--parallel-layers",
        default="64,256,1024",
        help="parallel: layer counts (16 types, cuts every 8 layers, t in 1-8, b 16) (default: %(default)s)",
    )
    parser.add_argument(
        "--limit",
        type=float_range(0.01, MAX_BENCH_SECONDS, "the solver runs this long per point"),
        default=60.0,
        help="parallel: the solver's limit per point, s (default: %(default)s)",
    )
    parser.add_argument(
        "--seeds",
        default="1,6,11,14,21,26,27,28,30,33,36",
        help="parallel-certify: held-out seeds, each solved cold on both sides (default: %(default)s)",
    )
    parser.add_argument(
        "--ref", default="HEAD", help="parallel-certify: the git revision this checkout is timed against"
    )
    parser.set_defaults(run=run)


def run_parallel(args) -> int:
    """The parallel-plan solver's time, plan and gap per layer count, with the load."""
    import sys

    from tqdm import tqdm

    from hps.bench.exact import parallel_point

    layers = _grid(args.parallel_layers, "--parallel-layers", MAX_WORKLOAD_LAYERS)
    if not (math.isfinite(args.limit) and args.limit > 0):
        raise ConfigError("--limit", "limit", f"must be a positive number of seconds, got {args.limit}")
    points = []
    for n in tqdm(layers, desc="parallel solver", file=sys.stderr, disable=args.json, leave=False):
        points.append(parallel_point(n, 16, seconds=args.limit))
    load = load_average()
    if args.json:
        print_json({"points": points, "load_average": load})
        return 0
    keys = ("layers", "types", "solve_s", "stages", "cost", "gap")
    rows = [[p[k] for k in keys] for p in points if not p["refused"]]
    print(f"parallel-plan exact solver, limit {args.limit:g} s, load average {load:.2f}:")
    print(format_table(["layers", "types", "solve_s", "stages", "cost_$", "gap"], rows))
    for p in (p for p in points if p["refused"]):
        print(f"{p['layers']} layers x {p['types']} types: refused, {p['refused']}")
    return 0


def run_parallel_score(args) -> int:
    """Plan scores per second of the batched JAX scorer and of numpy's score_plan, side by side."""
    from hps.bench.parallel_score import run as measure

    result = measure(min_seconds=args.seconds)
    if args.json:
        print_json(result)
        return 0
    print(
        f"parallel-plan scorer, {result['layers']} layers x {result['types']} types, plans of up to "
        f"{result['stages']} stages, {result['plans_per_call']:,} plans per call "
        f"({result['feasible_share']:.0%} feasible), on {result['device']}, in {result['threads']} parts on "
        "as many threads; numpy on one core"
    )
    print(_sides(result, "jax (jit, vmap, float64)", "plan_scores"))
    print(
        f"jax: {result['jax_per_cpu_s']:,.0f} plan scores per CPU-second; params built in {result['params_s']:.2f} s "
        f"(once per instance); load average {result['load_average']:.2f}"
    )
    return 0


def run_parallel_certify(args) -> int:
    """The exact parallel-plan solver's cold time to certificate, this checkout against --ref."""
    import sys

    from hps.bench.certify import run as measure

    seeds = _grid(args.seeds, "--seeds", 1_000_000)
    if not (math.isfinite(args.limit) and args.limit > 0):
        raise ConfigError("--limit", "limit", f"must be a positive number of seconds, got {args.limit}")
    result = measure(
        list(seeds), args.ref, seconds=args.limit, on_solve=lambda row: print(".", end="", file=sys.stderr)
    )
    if args.json:
        print_json(result)
        return 0
    rows = []
    for r in result["rows"]:
        ref, this = r["ref"], r["this"]
        wall, cpu = ref["wall_s"] / this["wall_s"], ref["cpu_s"] / this["cpu_s"]
        same = "yes" if r["same"] else "NO"
        rows.append(
            [r["seed"], ref["status"], ref["wall_s"], this["wall_s"], wall, ref["cpu_s"], this["cpu_s"], cpu, same]
        )
    print(f"\nexact parallel solver, cold, held-out seeds, limit {args.limit:g} s: {args.ref} vs this checkout")
    header = ["seed", "status", "ref_s", "this_s", "ratio", "ref_cpu_s", "this_cpu_s", "cpu_ratio", "same_cost"]
    print(format_table(header, rows))
    wall, cpu = result["median_wall_ratio"], result["median_cpu_ratio"]
    print(
        f"median ratio (seeds both certified): wall {wall or float('nan'):.2f}x, CPU {cpu or float('nan'):.2f}x; "
        f"load average {result['load_before']:.2f} before, {result['load_after']:.2f} after; nothing compiled"
    )
    return 0


def _sides(result: dict, jax_label: str, unit: str) -> str:
    rows = [[jax_label, result["jax_per_s"]], ["python reference", result["reference_per_s"]]]
    table = format_table(["side", f"{unit}_per_s"], rows)
    return f"{table}\nspeed-up {result['speedup']:.1f}x   (compile {result['compile_s']:.2f} s, excluded)"


def run(args) -> int:
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        raise ConfigError("--seconds", "seconds", f"must be a positive number, got {args.seconds}")
    if args.target == "rl":
        return run_rl(args)
    if args.target == "parallel":
        return run_parallel(args)
    if args.target == "parallel-score":
        return run_parallel_score(args)
    if args.target == "parallel-certify":
        return run_parallel_certify(args)
    from hps.bench import collective, placement

    grids = _exact_grids(args) if args.target == "placement" else None  # checked before any work
    if args.target == "placement":
        result = placement.run(min_seconds=args.seconds)
    else:
        result = collective.run(networks=args.networks, min_seconds=args.seconds)
    if args.target == "placement":
        result["exact"] = _exact_times(args, *grids)
    if args.json:
        print_json(result)
    elif args.target == "placement":
        print(
            f"placement model, {result['layers']} layers x {result['types']} types, "
            f"{result['schedules_per_call']:,} schedules per call, on {result['device']}"
        )
        print(_sides(result, "jax (jit, batched, table once)", "evaluations"))
        print(
            f"segment table {result['table_ms']:.2f} ms per instance; building it in every call: "
            f"{result['jax_table_each_call_per_s']:,.0f} evaluations/s"
        )
        print(f"exhaustive search over 4^10 schedules: {result['exhaustive_4pow10_s']:.2f} s after compile")
        points = result["exact"]["points"]
        rows = [[e["layers"], e["types"], e["solve_s"], e["stages"], e["gap"]] for e in points if not e["refused"]]
        print(f"\nexact solver (65,536 units per type), load average {result['exact']['load_average']:.2f}:")
        print(format_table(["layers", "types", "solve_s", "stages", "gap"], rows))
        for e in (e for e in points if e["refused"]):
            print(f"{e['layers']} layers x {e['types']} types: refused, {e['refused']}")
    else:
        print(
            f"collective simulator, {result['networks']:,} random networks x {result['chunks']} chunks "
            f"(themis orders, SCF), on {result['device']}, load average {result['load_average']:.2f}; "
            + (
                "jax as one call per dimension count"
                if result["one_call_per_group"]
                else f"jax in parts of at most 128 networks on {result['threads']} threads"
            )
            + ", the reference on one core"
        )
        print(_sides(result, "jax (jit, vmap)", "collectives"))
    return 0


def _grid(text: str, flag: str, most: int) -> tuple[int, ...]:
    """The integers of a comma-separated flag value, each 1..most; ConfigError naming the flag."""
    parts = text.split(",")
    empty = [i for i, part in enumerate(parts) if not part.strip()]
    if empty:
        raise ConfigError(flag, "", f"entry {empty[0] + 1} of {text!r} is empty; give integers from 1 to {most:,}")
    try:
        values = tuple(int(v) for v in parts)
    except ValueError:
        values = ()
    if not values or min(values) < 1 or max(values) > most:
        raise ConfigError(flag, "", f"must be a comma-separated list of integers from 1 to {most:,}, got {text!r}")
    return values


def _exact_grids(args) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(layers, types) of --exact-layers and --exact-types, within the workload and catalogue limits."""
    return _grid(args.exact_layers, "--exact-layers", MAX_WORKLOAD_LAYERS), _grid(
        args.exact_types, "--exact-types", MAX_CATALOG_TYPES
    )


def _exact_times(args, layers: tuple[int, ...], types: tuple[int, ...]) -> dict:
    """The exact solver's seconds at each of `layers` (at the base type count) and `types` (at
    the base layer count), with the load."""
    import sys

    from tqdm import tqdm

    from hps.bench import exact

    bar = tqdm(total=len(layers) + len(types), desc="exact solver", file=sys.stderr, disable=args.json, leave=False)
    found = exact.run(layers, types, on_point=lambda _: bar.update())
    bar.close()
    return {"points": found["by_layers"] + found["by_types"], "load_average": load_average()}


def run_rl(args) -> int:
    from hps.bench.rl import SETTINGS, measure

    names = list(SETTINGS) if args.rl_setting == "both" else [args.rl_setting]
    results = []
    for name in names:
        setting = dataclasses.replace(SETTINGS[name], min_seconds=args.seconds)
        results.append({"setting": name, **measure(setting=setting), "load_average": load_average()})
    if args.json:
        print_json(results[0] if len(results) == 1 else {"settings": results})
        return 0
    for i, result in enumerate(results):
        if i:
            print()
        _print_rl(result)
    return 0


def _print_rl(result: dict) -> None:
    print(
        f"RL loop, {result['num_envs']:,} envs x {result['layers']} layers x {result['types']} types, "
        f"{result['algorithm']} with the {result['encoder']} policy (hidden {result['hidden']}), on {result['device']}"
    )
    shared = f"policy rollout ({result['samples_per_instance']} envs per instance)"
    rows = [
        [name, result[f"{key}_steps_per_s"]]
        for name, key in (
            ("environment alone", "env"),
            (shared, "rollout"),
            ("policy rollout (1 env per instance)", "rollout_distinct"),
            ("training update", "train"),
        )
    ]
    print(format_table(["loop", "env_steps_per_s"], rows))
    print(
        f"compile {result['compile_s']:.1f} s in all (training {result['train_compile_s']:.1f} s), excluded; "
        f"load average {result['load_average']:.2f}"
    )
