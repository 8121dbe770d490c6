"""The hostile sweep of plan format hps-plan/3, the clocks and the Python API: plan files edited
by hand (virtual_stages, fp8, recompute, memory_headroom, collective, chunks and clock at their
extremes and of the wrong type; workload_sha256 and catalog_sha256 malformed, on a zoo name, of a
file changed or deleted; hps-plan/2 files with /3 keys; unknown keys; FP8 on types without an
FP8 peak; a stage with fewer layers than virtual stages) fed to `hps evaluate --plan`, `hps
execute` and `hps export`; `hps search`'s --virtual-stages, --fp8, --recompute, --memory-headroom,
--robust and --clock, with --out (no stale output), --json, --framework and --warm-start; `hps
sweep` with them; and `hps.Problem(..., clock=)`, open jobs scored directly and `Problem.robust()`
through `python -c`. Each case runs as its own process; the report counts how each group ended
and lists every failure.

    hps run experiments/hostile_sweep_plan3.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is the repository's, not the wheel's

from tools.hostile.sweep import HostileSweepConfig  # noqa: E402


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="hostile_sweep_plan3", cases="plan3", timeout_s=30.0)
