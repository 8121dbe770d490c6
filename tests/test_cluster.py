"""Where a process of a multi-process run learns its coordinator, process count and id
(`hps.io.cluster`, docs/executor.md "Across processes"): flags first, then JAX's variables,
SLURM's, SkyPilot's; one process needs nothing; bad values name their flag or variable."""

from __future__ import annotations

import pytest

from hps.errors import ConfigError
from hps.io.cluster import first_node, process_group, slurm_port


def test_nothing_set_is_one_process():
    assert process_group(None, None, None, {}) is None
    assert process_group(None, 1, None, {}) is None
    assert process_group(None, None, None, {"SLURM_NTASKS": "1", "SLURM_PROCID": "0"}) is None


def test_flags_win_over_every_variable():
    environ = {"JAX_COORDINATOR_ADDRESS": "a:1", "JAX_NUM_PROCESSES": "4", "JAX_PROCESS_ID": "3"}
    group = process_group("h:9000", 2, 1, environ)
    assert (group.coordinator, group.num_processes, group.process_id) == ("h:9000", 2, 1)
    assert group.sources == ("--coordinator", "--num-processes", "--process-id")


def test_jax_variables_give_what_the_flags_leave_unset():
    environ = {"JAX_COORDINATOR_ADDRESS": "10.0.0.1:1234", "JAX_NUM_PROCESSES": "4", "JAX_PROCESS_ID": "2"}
    group = process_group(None, None, None, environ)
    assert (group.coordinator, group.num_processes, group.process_id) == ("10.0.0.1:1234", 4, 2)
    assert process_group(None, None, 0, environ).process_id == 0  # a flag for one, variables for the rest
    assert "from JAX_COORDINATOR_ADDRESS" in group.describe()


def test_slurm_tasks_with_the_first_node_of_the_step_as_coordinator():
    environ = {
        "SLURM_NTASKS": "8",
        "SLURM_PROCID": "5",
        "SLURM_STEP_NODELIST": "gpu[003-005,9],cpu1",
        "SLURM_JOB_ID": "4100",
    }
    group = process_group(None, None, None, environ)
    assert (group.coordinator, group.num_processes, group.process_id) == ("gpu003:61444", 8, 5)
    assert slurm_port("4100") == 61440 + 4100 % 4096
    with_port = process_group(None, None, None, {**environ, "HPS_COORDINATOR_PORT": "7000"})
    assert with_port.coordinator == "gpu003:7000"
    explicit = process_group(None, None, None, {**environ, "JAX_COORDINATOR_ADDRESS": "head:1"})
    assert explicit.coordinator == "head:1" and explicit.sources[1:] == ("SLURM_NTASKS", "SLURM_PROCID")


def test_slurm_node_lists():
    assert first_node("node7") == "node7"
    assert first_node("a[1-4]") == "a1"
    assert first_node("tpu-[12,15-16],x") == "tpu-12"


def test_skypilot_nodes_with_the_first_address_as_coordinator():
    environ = {"SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_RANK": "1", "SKYPILOT_NODE_IPS": "10.1.0.4\n10.1.0.5\n"}
    group = process_group(None, None, None, environ)
    assert (group.coordinator, group.num_processes, group.process_id) == ("10.1.0.4:8476", 2, 1)
    assert group.sources == ("SKYPILOT_NODE_IPS", "SKYPILOT_NUM_NODES", "SKYPILOT_NODE_RANK")


@pytest.mark.parametrize(
    "flags, environ, source, needle",
    [
        ((None, 2, None), {}, "--num-processes", "need a coordinator"),
        (("h:1", 2, 2), {}, "--process-id", "must be in [0, 2)"),
        (("nohost", 2, 0), {}, "--coordinator", "must be HOST:PORT"),
        ((None, None, None), {"JAX_NUM_PROCESSES": "two"}, "JAX_NUM_PROCESSES", "whole number"),
        ((None, None, None), {"SLURM_NTASKS": "4", "SLURM_PROCID": "4", "SLURM_STEP_NODELIST": "n1"}, "SLURM_PROCID",
         "must be in [0, 4)"),
        ((None, None, None), {"JAX_COORDINATOR_ADDRESS": "h:99999", "JAX_NUM_PROCESSES": "2"},
         "JAX_COORDINATOR_ADDRESS", "HOST:PORT"),
        ((None, None, None), {"SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": " \n"},
         "SKYPILOT_NODE_IPS", "is empty or unset"),
        ((None, None, None), {"SLURM_NTASKS": "2", "SLURM_PROCID": "1"}, "SLURM_JOB_NODELIST", "is empty or unset"),
        ((None, None, None), {"SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": "10.0.0.1",
                              "HPS_COORDINATOR_PORT": "99999999"}, "HPS_COORDINATOR_PORT", "from 1 to 65535"),
    ],
)  # fmt: skip
def test_values_no_run_can_use_name_their_flag_or_variable(flags, environ, source, needle):
    with pytest.raises(ConfigError) as raised:
        process_group(*flags, environ)
    assert raised.value.source == source and needle in str(raised.value)
