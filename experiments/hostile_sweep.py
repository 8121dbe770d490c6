"""The hostile-input sweep: every command with malformed and extreme values (1e308, 1e-300,
10^9 and 10^20 sizes, nan, inf, wrong types, control characters in names, damaged files), and
faults around a training run folder (kills and resumes, two runs at once, a stale lock, flipped
bits in checkpoints). Each case runs as its own `hps` process; the report counts how each
group ended and lists every failure (a traceback, a hang past 30 s, nan/inf printed, a lost
record, a damaged checkpoint loaded).

    hps run experiments/hostile_sweep.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is the repository's, not the wheel's

from tools.hostile.sweep import HostileSweepConfig  # noqa: E402


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="hostile_sweep", timeout_s=30.0)
