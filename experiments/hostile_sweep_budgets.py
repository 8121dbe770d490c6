"""The hostile sweep of the most throughput within a budget: `hps search --maximize throughput
--budget` at its extremes and beside every other search flag (--out over a stale file, --json,
--method, the schedule model, --warm-start, --robust, --framework, a floor no budget buys),
`--evaluations` where `--budget` used to count evaluations, plan files whose job.budget_per_hour
is malformed or under the plan's own $/hour (evaluate, execute, export), `hps sweep --maximize
throughput --budgets` at its extremes, and `Problem.with_job(budget_per_hour=...)` through
`python -c`. Each case runs as its own process; the report counts how each group ended and lists
every failure.

    hps run experiments/hostile_sweep_budgets.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is the repository's, not the wheel's

from tools.hostile.sweep import HostileSweepConfig  # noqa: E402


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="hostile_sweep_budgets", cases="budgets", timeout_s=30.0)
