"""The newer hostile sweep: 500 cases beyond the 288 of `hostile_sweep.py`. Outputs that are not
plain files (character devices, /dev/full, FIFOs with and without a reader, sockets, block
devices, directories, symlinks in and out of the folder, dangling and in loops) for every output
flag and run folder; inputs that are not regular files; TOML and JSON nested 100,000 deep or
17 MiB long; plan files edited by hand; every numeric flag past its range; impossible jobs;
bidi controls and names equal after normalisation; byte-order marks and repeated keys; empty
list entries; standard output closed early; SIGTERM and SIGHUP during train, quickstart and run;
two runs into one folder; links where a run folder's own files belong. Each case runs as its
own `hps` process; the report counts how each group ended and lists every failure.

    hps run experiments/hostile_sweep_new.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is the repository's, not the wheel's

from tools.hostile.sweep import HostileSweepConfig  # noqa: E402


def config() -> HostileSweepConfig:
    return HostileSweepConfig(name="hostile_sweep_new", cases="new", timeout_s=30.0)
