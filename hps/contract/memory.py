"""How much memory a planning command may take, and refusing arrays past it before they exist.

Every size-dependent array of `hps search` is estimated before it is allocated and refused with
InstanceTooLarge (naming the arrays, their estimate and the memory there is) when the estimate
passes half of `memory_limit_bytes()`: the exact solver's span arrays and dense table
(`hps.methods.exact_schedule.table`), the jnp placement model's segment table and the numpy table the
searches use past it (`jnp_model_bytes`, `numpy_table_bytes`).
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path

from hps.errors import InstanceTooLarge

NUMPY_TABLE_BYTES_PER_STAGE = 224
"""Bytes the numpy provisioning of the searches' table holds per real stage (first, last, type)
at its peak: every stage's indices and some twenty float64/int64 temporaries (measured: 203-213)."""

PADDED_TABLE_BYTES_PER_STAGE = 24
"""Bytes per padded stage of the searches' table: three 4-byte columns in numpy and their copy
on the device."""

CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
"""The memory limit of a container's cgroup, version 2 then version 1 (absent or "max": none)."""


def memory_limit_bytes() -> int:
    """Bytes this process may take: the least of the machine's physical memory, its container's
    memory limit (cgroup), and what its address-space limit (`ulimit -v`) leaves over the address
    space it already maps."""
    limits = [os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")]
    limits += [limit for limit in map(_read_int, CGROUP_LIMITS) if limit is not None]
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        limits.append(soft - _mapped_bytes())
    return max(min(limits), 0)


def refuse_past_memory(what: str, needed: float) -> None:
    """InstanceTooLarge naming `what` and its estimate when `needed` bytes pass half of
    `memory_limit_bytes()` (the other half is left to the rest of the process)."""
    memory = memory_limit_bytes()
    if needed > memory / 2:
        raise InstanceTooLarge(
            f"{what} needs about {needed / 2**30:,.1f} GiB, over half of the {memory / 2**30:,.1f} GiB of memory "
            "this process may use"
        )


def jnp_model_bytes(layers: int, types: int, replicas: int) -> int:
    """Bytes of the jnp placement model's arrays of one instance of `layers` x `types` and a scan
    over `replicas` units: the L·L·T·K segment scan (several float32 arrays) and the L³ layer
    membership tensor, as `hps.costmodel.schedule.params.check_dense_size` counts them."""
    return 4 * (layers**3 + 6 * layers * layers * types * replicas)


def numpy_table_bytes(layers: int, types: int, padded_layers: int, padded_types: int) -> int:
    """Peak bytes of the searches' numpy segment table (`hps.costmodel.schedule.numpy_table`):
    L·(L+1)/2·T real stages provisioned at once, then the padded (L', L', T') table."""
    stages = layers * (layers + 1) // 2 * types
    return NUMPY_TABLE_BYTES_PER_STAGE * stages + PADDED_TABLE_BYTES_PER_STAGE * padded_layers**2 * padded_types


def _mapped_bytes() -> int:
    """Bytes of address space this process maps now (VmSize); 0 where the kernel does not say."""
    try:
        found = re.search(r"^VmSize:\s*(\d+) kB$", Path("/proc/self/status").read_text(), re.MULTILINE)
    except OSError:
        return 0
    return int(found.group(1)) * 1024 if found else 0


def _read_int(path: str) -> int | None:
    """The integer in the file at `path`; None where it is missing, unreadable or "max"."""
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None
