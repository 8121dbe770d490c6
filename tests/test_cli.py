"""Command contracts (the flags and JSON keys other tools rely on) and clear errors: exit 2, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hps.cli.main import main
from tests.helpers import SMALL, run_json

EVALUATE_KEYS = {"feasible", "reason", "throughput", "dollars_per_hour", "cost", "stages"}
STAGE_KEYS = {"type", "first_layer", "last_layer", "replicas", "time"}


def test_evaluate_json_has_the_contract_keys(capsys):
    out = run_json(capsys, ["evaluate", *SMALL, "--schedule", "cpu,cpu,gpu-a,gpu-a,gpu-a,gpu-a,gpu-a", "--json"])
    assert EVALUATE_KEYS <= out.keys()
    assert [s["type"] for s in out["stages"]] == ["cpu", "gpu-a"]
    assert all(STAGE_KEYS <= s.keys() for s in out["stages"])
    assert out["stages"][0]["first_layer"] == 0 and out["stages"][-1]["last_layer"] == 6
    if out["feasible"]:
        assert out["reason"] is None and out["cost"] > 0


def test_evaluate_reports_which_stage_failed_on_an_infeasible_floor(capsys):
    argv = ["evaluate", *SMALL[:-4], "--throughput", "1e12", "--samples", "1e8", "--json"]
    out = run_json(capsys, [*argv, "--schedule", ",".join(["gpu-b"] * 7)])
    assert out["feasible"] is False and out["cost"] is None
    assert "layer 0" in out["reason"]


def test_search_exhaustive_json_matches_evaluate_of_its_schedule(capsys):
    found = run_json(capsys, ["search", *SMALL, "--method", "exhaustive", "--json"])
    again = run_json(capsys, ["evaluate", *SMALL, "--schedule", ",".join(found["schedule"]), "--json"])
    assert found["cost"] == pytest.approx(again["cost"], rel=1e-6)
    assert found["results"][0]["evaluations"] == 3**7


def test_workload_export_round_trips_through_evaluate(tmp_path, capsys):
    path = tmp_path / "ctr.toml"
    assert main(["workload", "export", "ctr-dnn", "--out", str(path)]) == 0
    by_file = run_json(
        capsys,
        ["evaluate", *SMALL[:2], "--workload", str(path), *SMALL[4:], "--schedule", ",".join(["cpu"] * 7), "--json"],
    )
    by_name = run_json(capsys, ["evaluate", *SMALL, "--schedule", ",".join(["cpu"] * 7), "--json"])
    assert by_file == by_name


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["evaluate", *SMALL, "--schedule", "cpu,cpu"], "--schedule"),
        (["evaluate", *SMALL, "--schedule", ",".join(["tpu"] * 7)], "unknown resource type 'tpu'"),
        (["evaluate", "--catalog", "nope", "--workload", "ctr-dnn", "--schedule", "cpu"], "--catalog"),
        (["evaluate", "--workload", "no-such-model", "--schedule", "cpu"], "unknown workload"),
        (["evaluate", *SMALL[:4], "--throughput", "-5", "--schedule", ",".join(["cpu"] * 7)], "--throughput"),
        (["search", *SMALL, "--method", "exhaustive", "--evaluations", "10"], "genetic"),
    ],
)
def test_bad_input_gives_one_clear_error_and_exit_2(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_broken_catalog_file_exits_2_without_traceback(tmp_path):
    broken = tmp_path / "broken.toml"
    broken.write_text("name = 'x'\n[[resource]\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "hps.cli.main",
            "evaluate",
            "--catalog",
            str(broken),
            "--workload",
            "ctr-dnn",
            "--schedule",
            "cpu",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert str(broken) in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""


def _glibc_at_least(major: int, minor: int) -> bool:
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION").split()[1]
    except (ValueError, OSError, AttributeError, IndexError):
        return False
    return tuple(int(x) for x in version.split(".")[:2]) >= (major, minor)


RESTART_PROBE = """
import os, sys
sys.argv = [{script!r}, *{argv!r}]
def execve(path, args, env):
    print("RESTART", env["GLIBC_TUNABLES"], args == [sys.executable, *sys.orig_argv[1:]], path == sys.executable)
    sys.exit(0)
os.execve = execve
from hps.cli.main import main
sys.exit(main())
"""


@pytest.mark.skipif(not _glibc_at_least(2, 35), reason="glibc's hugetlb tunable needs glibc >= 2.35")
@pytest.mark.parametrize(
    ("argv", "environ", "restarts"),
    [
        (["profile", "--help"], {}, True),
        (["execute", "--help"], {"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}, True),
        (["profile", "--help"], {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=0"}, False),
        (["profile", "--help"], {"HPS_HUGE_PAGES": "0"}, False),
        (["sweep", "--help"], {}, False),
    ],
)
def test_the_console_script_restarts_device_commands_with_huge_pages(argv, environ, restarts):
    """`hps profile|execute|run|quickstart` start once more with glibc's hugetlb tunable (kept
    beside the caller's tunables); planning commands, HPS_HUGE_PAGES=0 and a caller's own hugetlb
    setting do not."""
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "HPS_HUGE_PAGES")} | environ
    code = RESTART_PROBE.format(script=os.path.join(os.path.dirname(sys.executable), "hps"), argv=argv)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    if restarts:
        want = ":".join(filter(None, (environ.get("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=1")))
        assert done.stdout.strip() == f"RESTART {want} True True"
    else:
        assert "RESTART" not in done.stdout and "usage: hps" in done.stdout


@pytest.mark.skipif(not _glibc_at_least(2, 35), reason="glibc's hugetlb tunable needs glibc >= 2.35")
def test_a_users_own_script_calling_main_is_not_restarted():
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "HPS_HUGE_PAGES")}
    code = RESTART_PROBE.format(script="/somewhere/my_job.py", argv=["profile", "--help"])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and "RESTART" not in done.stdout and "usage: hps" in done.stdout
