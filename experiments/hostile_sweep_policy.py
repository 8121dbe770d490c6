"""The hostile sweep of the parallel-plan policy: `hps train --kind parallel` and its experiment
files at their extremes, `hps plan --checkpoint` with a parallel policy on zoo workloads of every
size and with its flags at their extremes, `--out` written only with a plan, and checkpoints of
one kind given where another is needed. Each case runs as its own process; the report counts how
each group ended and lists every failure.

    hps run experiments/hostile_sweep_policy.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is the repository's, not the wheel's

from tools.hostile.sweep import HostileSweepConfig  # noqa: E402


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="hostile_sweep_policy", cases="policy", timeout_s=120.0)
