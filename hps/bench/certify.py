"""The exact parallel-plan solver's cold time to certificate on generated instances, this checkout
against another revision of the repository, side by side.

Each (instance, side) is solved once in a fresh Python process (so cold: no stage table, layer
time or incumbent carried over; `python -c` of `SOLVE`, which uses only long-standing entry
points, so that an older revision runs it too). The other revision is `git archive`d into a
temporary folder and put first on PYTHONPATH; the two sides alternate, which side goes first
alternating from instance to instance, so that drifting load on a shared machine falls on both.
Wall seconds and the process's CPU seconds are both kept: on a loaded machine the CPU seconds say
more about the code.
"""

from __future__ import annotations

import io
import json
import math
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from hps.config.machine import load_average

SOLVE = """
import json, sys, time
from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.methods.exact_parallel.solver import solve_parallel
try:
    from hps.placement.env.parallel_generator import SPLITS, generate
except ImportError:  # a revision from before the generator moved
    from hps.studies.hard_instances import SPLITS, generate
split, seed, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
problem = generate(SPLITS[split], seed, load_catalog(resolve_topology("cloud-2026", "catalogs", "x"))).problem
wall, cpu = time.perf_counter(), time.process_time()
result = solve_parallel(problem, seconds=seconds)
print(json.dumps({"status": result.status, "cost": result.cost, "bound": result.bound,
                  "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}))
"""
"""The child's program: argv split, seed, seconds; prints one JSON line."""


def archived(repo: Path, ref: str, into: Path) -> Path:
    """`ref` of the git repository at `repo` as files under `into` (`git archive`)."""
    data = subprocess.run(["git", "-C", str(repo), "archive", ref], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        archive.extractall(into / "tree", filter="data")
    return into / "tree"


def same_result(a: dict, b: dict) -> bool:
    """Whether two children's answers agree: status, and cost to 1e-9 relative (or both none)."""
    if a["status"] != b["status"]:
        return False
    if math.isinf(a["cost"]) or math.isinf(b["cost"]):
        return math.isinf(a["cost"]) and math.isinf(b["cost"])
    return abs(a["cost"] - b["cost"]) <= 1e-9 * abs(a["cost"])


def solve_in_child(root: Path, split: str, seed: int, seconds: float, nice: int = 0) -> dict:
    """One cold solve with the repository at `root` first on the path (the child's JSON line)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [sys.executable, "-c", SOLVE, split, str(seed), str(seconds)]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    done = subprocess.run(command, cwd=root, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(
    seeds: list[int],
    ref: str,
    seconds: float = 300.0,
    split: str = "held-out",
    nice: int = 0,
    repo: Path | None = None,
    on_solve: Callable[[dict], None] | None = None,
) -> dict:
    """{"rows": per seed {"seed", "ref", "this" (each a child's JSON: status, cost $, bound $,
    wall_s, cpu_s), "same" (`same_result`)}, "median_wall_ratio", "median_cpu_ratio" (ref over
    this, over the seeds both sides certified), "equal_costs", "load_before", "load_after"}.
    `on_solve(row)` after each solve; `nice`: the children's niceness increment."""
    repo = Path(__file__).resolve().parents[2] if repo is None else repo
    load_before, rows = load_average(), []
    with tempfile.TemporaryDirectory(prefix="hps-certify-") as folder:
        other = archived(repo, ref, Path(folder))
        for i, seed in enumerate(seeds):
            row = {"seed": seed}
            sides = [("ref", other), ("this", repo)]
            for side, root in sides if i % 2 == 0 else sides[::-1]:
                row[side] = solve_in_child(root, split, seed, seconds, nice)
                if on_solve is not None:
                    on_solve(row)
            rows.append(row)
    both = [r for r in rows if r["ref"]["status"] == r["this"]["status"] == "optimal"]
    ratio = lambda key: statistics.median([r["ref"][key] / r["this"][key] for r in both]) if both else None  # noqa: E731
    for row in rows:
        row["same"] = same_result(row["ref"], row["this"])
    return {
        "rows": rows,
        "median_wall_ratio": ratio("wall_s"),
        "median_cpu_ratio": ratio("cpu_s"),
        "equal_costs": all(row["same"] for row in rows),
        "load_before": load_before,
        "load_after": load_average(),
    }
