"""The sweep's cases about multi-process runs: `hps launch` at its extremes (counts, a missing or
unknown command, a child that fails or is killed), `hps execute`'s --coordinator,
--num-processes, --process-id and --timeout at theirs, and the cluster variables (JAX_*, SLURM,
SkyPilot, HPS_COORDINATOR_PORT) malformed or contradicting each other, set through `python -c`.
A process whose peers never start must end at its --timeout with a message, not hang.
"""

from __future__ import annotations

import json

from tools.hostile.plans import SMALL_PLAN, _case

PLAN = {"p.json": json.dumps(SMALL_PLAN)}
EXECUTE = ["execute", "p.json", "--steps", "1"]
LAUNCH = ["launch"]


def launch_cases() -> list[dict]:
    cases = []
    for value in ("0", "-1", "1.5", "abc", "", "1e9", "100000"):
        cases.append(_case("processes launch", [*LAUNCH, "--processes", value, "--", "hps", "--version"], {}, True,
                           "processes"))  # fmt: skip
    for value in ("0", "-2", "x", "1e6"):
        argv = [*LAUNCH, "--processes", "2", "--devices-per-process", value, "--", "hps", "--version"]
        cases.append(_case("processes launch", argv, {}, True, "devices.?per.?process"))
    for argv, said in (
        ([*LAUNCH, "--processes", "2"], "after --"),
        ([*LAUNCH, "--processes", "2", "--"], "after --"),
        ([*LAUNCH, "--", "hps", "--version"], "processes"),
        ([*LAUNCH, "--processes", "2", "--", "no-such-command-hps"], "no-such-command|not found|No such"),
        ([*LAUNCH, "--processes", "2", "--", "hps", "execute", "missing.json"], "missing.json"),
        ([*LAUNCH, "--processes", "2", "--", "hps", "no-such-subcommand"], "invalid choice|no-such-subcommand"),
    ):
        cases.append(_case("processes launch", argv, {}, True, said, timeout=60.0))
    cases.append(_case("processes launch", [*LAUNCH, "--processes", "2", "--", "hps", "--version"], {}, False))
    cases.append(_case("processes launch", [*LAUNCH, "--processes", "3", "--devices-per-process", "1", "--", "hps",
                                            "--help"], {}, False))  # fmt: skip
    return cases


def flag_cases() -> list[dict]:
    cases = []
    for flags, said in (
        (["--coordinator", "nohost"], "coordinator"),
        (["--coordinator", ":123", "--num-processes", "2"], "coordinator"),
        (["--coordinator", "h:port", "--num-processes", "2"], "coordinator"),
        (["--coordinator", "127.0.0.1:99999999", "--num-processes", "2"], "coordinator|port"),
        (["--num-processes", "0"], "num.?processes"),
        (["--num-processes", "-1"], "num.?processes"),
        (["--num-processes", "2.5"], "num.?processes"),
        (["--num-processes", "2"], "coordinator"),
        (["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "2"], "process.?id"),
        (["--coordinator", "127.0.0.1:1", "--num-processes", "2", "--process-id", "-1"], "process.?id"),
        (["--process-id", "1"], "process.?id|num.?processes|coordinator"),
        (["--timeout", "0"], "timeout"),
        (["--timeout", "-5"], "timeout"),
        (["--timeout", "nan"], "timeout"),
        (["--timeout", "1e12"], "timeout"),
    ):
        cases.append(_case("processes flags", [*EXECUTE, *flags], PLAN, True, said))
    return cases


PYTHON = """
import os, sys
os.environ.update({environ})
from hps.cli.main import main
sys.exit(main({argv}))
"""
ENVIRONS = (  # (variables, refused, said)
    ({"JAX_NUM_PROCESSES": "x"}, True, "JAX_NUM_PROCESSES"),
    ({"JAX_NUM_PROCESSES": "0"}, True, "JAX_NUM_PROCESSES"),
    ({"JAX_NUM_PROCESSES": "2"}, True, "coordinator|JAX_COORDINATOR_ADDRESS"),
    ({"JAX_NUM_PROCESSES": "2", "JAX_COORDINATOR_ADDRESS": "127.0.0.1:1", "JAX_PROCESS_ID": "5"}, True,
     "JAX_PROCESS_ID|process.?id"),
    ({"JAX_NUM_PROCESSES": "2", "JAX_COORDINATOR_ADDRESS": "nohost", "JAX_PROCESS_ID": "0"}, True,
     "JAX_COORDINATOR_ADDRESS|coordinator"),
    ({"SLURM_NTASKS": "two", "SLURM_PROCID": "0"}, True, "SLURM_NTASKS"),
    ({"SLURM_NTASKS": "2", "SLURM_PROCID": "7", "SLURM_JOB_NODELIST": "n[1-2]"}, True, "SLURM_PROCID|process.?id"),
    ({"SLURM_NTASKS": "2", "SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "[]"}, True, "SLURM|NODELIST|host"),
    ({"SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_RANK": "x", "SKYPILOT_NODE_IPS": "10.0.0.1\\n10.0.0.2"}, True,
     "SKYPILOT_NODE_RANK"),
    ({"SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": ""}, True, "SKYPILOT_NODE_IPS"),
    ({"SKYPILOT_NUM_NODES": "2", "SKYPILOT_NODE_RANK": "0", "SKYPILOT_NODE_IPS": "10.0.0.1",
      "HPS_COORDINATOR_PORT": "99999999"}, True, "HPS_COORDINATOR_PORT|port"),
    ({"JAX_NUM_PROCESSES": "1"}, False, None),
    ({"SLURM_NTASKS": "1", "SLURM_PROCID": "0"}, False, None),
)  # fmt: skip


def environ_cases() -> list[dict]:
    cases = []
    for environ, refused, said in ENVIRONS:
        code = PYTHON.format(environ=repr(environ), argv=repr([*EXECUTE, "--timeout", "3"]))
        case = {"group": "processes environ", "argv": [], "files": PLAN, "python": code, "timeout": 60.0}
        cases.append({**case, **({"expect": "refusal", "said": said} if refused else {})})
    return cases


def never_joined_cases() -> list[dict]:
    """One process of two alone (either id): it must end at --timeout, exit 2, saying so."""
    cases = []
    for index in (0, 1):
        environ = {"JAX_NUM_PROCESSES": "2", "JAX_COORDINATOR_ADDRESS": "127.0.0.1:47311", "JAX_PROCESS_ID": str(index)}
        code = PYTHON.format(environ=repr(environ), argv=repr([*EXECUTE, "--timeout", "3", "--out", "r.json"]))
        cases.append({"group": "processes never joined", "argv": [], "files": PLAN, "python": code, "timeout": 60.0,
                      "expect": "refusal", "said": "did not all join within 3 s"})  # fmt: skip
    return cases


def cases() -> list[dict]:
    return [*launch_cases(), *flag_cases(), *environ_cases(), *never_joined_cases()]
