"""What the machine this process runs on offers, read once per call: its usable CPU cores."""

from __future__ import annotations

import os


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the platform has one, else
    the machine's count; at least 1)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
