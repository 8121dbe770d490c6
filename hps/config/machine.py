"""What the machine this process runs on offers and how busy it is, read afresh on each call:
its usable CPU cores and its load average."""

from __future__ import annotations

import os


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the platform has one, else
    the machine's count; at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def load_average() -> float:
    """The machine's 1-minute load average (runnable processes, mean); 0 where the platform
    reports none. Benchmarks print it beside absolute figures."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
