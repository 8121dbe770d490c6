"""The hostile sweep of multi-process runs: `hps launch` at its extremes (counts, a missing or
unknown command, a failing child), `hps execute`'s --coordinator, --num-processes, --process-id
and --timeout at theirs, the cluster variables (JAX_*, SLURM, SkyPilot, HPS_COORDINATOR_PORT)
malformed, and one process of two alone, which must end at its --timeout saying so. Each case
runs as its own process; the report counts how each group ended and lists every failure.

    hps run experiments/hostile_sweep_processes.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is the repository's, not the wheel's

from tools.hostile.sweep import HostileSweepConfig  # noqa: E402


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="hostile_sweep_processes", cases="processes", timeout_s=30.0)
