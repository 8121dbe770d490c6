"""Which process of a multi-process run this is: the coordinator address, the process count and
this process's id, from command-line flags or from the variables a cluster's launcher sets.

Each of the three comes from the first of these that gives it:

1. the flags (`--coordinator HOST:PORT`, `--num-processes N`, `--process-id I`);
2. JAX's own variables: JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID (what
   `hps launch` sets for its children);
3. SLURM (one process per task): SLURM_NTASKS, SLURM_PROCID; the coordinator is the first node
   of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST) at port `slurm_port` of SLURM_JOB_ID;
4. SkyPilot (one process per node): SKYPILOT_NUM_NODES, SKYPILOT_NODE_RANK; the coordinator is
   the first address of SKYPILOT_NODE_IPS (one a line) at COORDINATOR_PORT.

HPS_COORDINATOR_PORT, where set, replaces the port of 3 and 4. A run of one process (nothing
set, or a count of 1) needs no coordinator. Nothing here imports JAX or prints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hps.errors import ConfigError

COORDINATOR_PORT = 8476
"""Port of the coordinator taken from SkyPilot's node list (JAX's usual coordinator port)."""

PORT_VARIABLE = "HPS_COORDINATOR_PORT"

FLAGS = {"coordinator": "--coordinator", "num_processes": "--num-processes", "process_id": "--process-id"}


@dataclass(frozen=True)
class ProcessGroup:
    """This process's place in a multi-process run. sources: where each of coordinator,
    num_processes and process_id came from (a flag or a variable's name)."""

    coordinator: str
    num_processes: int
    process_id: int
    sources: tuple[str, str, str]

    def describe(self) -> str:
        """One line naming the process and where its settings came from."""
        origins = ", ".join(dict.fromkeys(self.sources))
        return f"process {self.process_id} of {self.num_processes} at {self.coordinator} (from {origins})"


def slurm_port(job_id: str) -> int:
    """The coordinator port of SLURM job `job_id`: 61440 + id mod 4096, as JAX's own SLURM
    detection picks, so two jobs sharing a node use two ports."""
    return 61440 + int(job_id) % 4096 if job_id.isdigit() else COORDINATOR_PORT


def first_node(nodelist: str) -> str:
    """The first host of a SLURM node list: "gpu[003-005,9],cpu1" -> "gpu003"."""
    head = re.match(r"([^,\[]+)(\[([^\]]*)\])?", nodelist.strip())
    if head is None or not head.group(1):
        raise ConfigError("SLURM_STEP_NODELIST", "", f"cannot read a host from {nodelist!r}")
    if head.group(3) is None:
        return head.group(1)
    return head.group(1) + head.group(3).split(",")[0].split("-")[0]


def _port(environ: Mapping[str, str]) -> str | None:
    """HPS_COORDINATOR_PORT where set; ConfigError naming it where it is not a port (1-65535)."""
    port = environ.get(PORT_VARIABLE)
    if port is not None and not (port.strip().isdigit() and 0 < int(port) < 65536):
        raise ConfigError(PORT_VARIABLE, "", f"must be a port number from 1 to 65535, got {port!r}")
    return None if port is None else port.strip()


def _conventions(environ: Mapping[str, str]) -> list[tuple[str, str | None, str | None, str | None]]:
    """(name, coordinator, count, id) each convention gives in `environ` (None where it gives none)."""
    port = _port(environ)
    slurm_nodes = environ.get("SLURM_STEP_NODELIST") or environ.get("SLURM_JOB_NODELIST")
    slurm_coordinator = None
    if slurm_nodes:
        slurm_coordinator = f"{first_node(slurm_nodes)}:{port or slurm_port(environ.get('SLURM_JOB_ID', ''))}"
    ips = [line.strip() for line in environ.get("SKYPILOT_NODE_IPS", "").splitlines() if line.strip()]
    sky_coordinator = f"{ips[0]}:{port or COORDINATOR_PORT}" if ips else None
    return [
        (
            "JAX",
            environ.get("JAX_COORDINATOR_ADDRESS"),
            environ.get("JAX_NUM_PROCESSES"),
            environ.get("JAX_PROCESS_ID"),
        ),
        ("SLURM", slurm_coordinator, environ.get("SLURM_NTASKS"), environ.get("SLURM_PROCID")),
        ("SkyPilot", sky_coordinator, environ.get("SKYPILOT_NUM_NODES"), environ.get("SKYPILOT_NODE_RANK")),
    ]


VARIABLES = {
    "JAX": ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID"),
    "SLURM": ("SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID"),
    "SkyPilot": ("SKYPILOT_NODE_IPS", "SKYPILOT_NUM_NODES", "SKYPILOT_NODE_RANK"),
}


def _whole(text: str, source: str, field: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ConfigError(source, field, f"must be a whole number, got {text!r}") from None


def process_group(
    coordinator: str | None,
    num_processes: int | None,
    process_id: int | None,
    environ: Mapping[str, str],
) -> ProcessGroup | None:
    """This process's ProcessGroup from the flags (None: not given) and `environ`, or None for a
    run of one process. ConfigError naming the flag or variable of a value that cannot be used:
    a count below 1, an id outside [0, count), several processes without a coordinator, a
    coordinator that is not HOST:PORT."""
    given = {"coordinator": coordinator, "num_processes": num_processes, "process_id": process_id}
    values: dict[str, object] = {}
    sources: dict[str, str] = {}
    for field, value in given.items():
        if value is not None:
            values[field], sources[field] = value, FLAGS[field]
    for name, *found in _conventions(environ):
        for index, (field, value) in enumerate(zip(given, found)):
            if field not in values and value not in (None, ""):
                source = VARIABLES[name][index]
                if name == "SLURM" and field == "coordinator" and "SLURM_STEP_NODELIST" not in environ:
                    source = "SLURM_JOB_NODELIST"
                values[field], sources[field] = value, source
    if not values:
        return None
    count = _whole(values.get("num_processes", 1), sources.get("num_processes", "--num-processes"), "num_processes")
    index = _whole(values.get("process_id", 0), sources.get("process_id", "--process-id"), "process_id")
    if count < 1:
        raise ConfigError(sources["num_processes"], "num_processes", f"must be at least 1, got {count}")
    if not 0 <= index < count:
        where = sources.get("process_id", "--process-id")
        raise ConfigError(where, "process_id", f"must be in [0, {count}) for {count} processes, got {index}")
    if count == 1 and "coordinator" not in values:
        return None
    if "coordinator" not in values:
        source = sources.get("num_processes", "--num-processes")
        lists = {"SKYPILOT_NUM_NODES": "SKYPILOT_NODE_IPS", "SLURM_NTASKS": "SLURM_JOB_NODELIST"}
        if source in lists:  # the cluster's own list of hosts is missing or empty
            raise ConfigError(lists[source], "coordinator", f"is empty or unset, and {source} gives {count} processes")
        raise ConfigError(
            source,
            "coordinator",
            f"{count} processes need a coordinator: give --coordinator HOST:PORT or set JAX_COORDINATOR_ADDRESS",
        )
    address = str(values["coordinator"]).strip()
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(sources["coordinator"], "coordinator", f"must be HOST:PORT, got {address!r}")
    return ProcessGroup(
        address,
        count,
        index,
        (sources["coordinator"], sources.get("num_processes", "default"), sources.get("process_id", "default")),
    )
