"""Sizes bounded before work starts, and trust and hygiene: huge `--set` values, searches past
memory, control characters in names, output modes under the umask, and files run as Python.

Commands that could eat the machine run in a subprocess under an address-space limit
(RLIMIT_AS) and a timeout, so a regression fails the test instead of swapping."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hps.cli.main import main
from hps.config.loaders import load_workload
from hps.workloads.registry import FACTORIES, ZOO, base_workload, hyperparameters
from tests.helpers import run_cli_output

ROOT = Path(__file__).resolve().parents[2]
GIB = 2**30
ESC = "\x1b[31m"
SHOWN = "\\x1b[31m"  # how a name holding ESC [31m is shown


LAUNCH = (
    "import os, resource, sys\n"
    "limit, umask = int(sys.argv[1]), int(sys.argv[2])\n"
    "resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "if umask >= 0:\n"
    "    os.umask(umask)\n"
    "from hps.cli.main import main\n"
    "sys.exit(main(sys.argv[3:]))\n"
)
"""Runs `hps ARGS` under an address-space limit and umask set before hps is imported (no fork
of this, possibly multithreaded, process runs Python code)."""


def hps(args: list[str], *, limit: int = 2 * GIB, timeout: float = 120, umask: int = -1):
    """(returncode, stdout, stderr, seconds) of `hps ARGS` in a fresh process whose address space
    is limited to `limit` bytes, with `umask` if given (JAX on the CPU, so no accelerator maps
    memory)."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    command = [sys.executable, "-c", LAUNCH, str(limit), str(umask), *args]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - started


# ------------------------------------------------------------------ --set sizes


@pytest.mark.parametrize(
    "args, field, limit",
    [
        (["workload", "export", "transformer", "--set", "layers=1099511627776"], "transformer.layers", "4,096"),
        (["workload", "export", "transformer", "--set", "hidden=1099511627776"], "transformer.hidden", "1,048,576"),
        (["workload", "export", "transformer", "--set", "layers=2047"], "transformer.layers", "4,096"),
        (["workload", "export", "gnmt", "--set", "encoder_layers=4093"], "gnmt.encoder_layers", "4,096"),
        (["workload", "export", "mlp", "--set", "hidden=" + ",".join(["8"] * 5000)], "mlp.hidden", "4,096"),
        (["workload", "export", "resnet50", "--set", "blocks=" + ",".join(["1"] * 40)], "resnet50.width", "1,048,576"),
        (["workload", "export", "ctr-dnn", "--set", "rows=1e300"], "ctr-dnn.rows", "1e+12"),
        (["search", "--workload", "llama3-70b", "--set", "layers=1099511627776"], "llama3-70b.layers", "4,096"),
    ],
)
def test_huge_set_values_exit_2_at_once_naming_the_field_and_the_limit(args, field, limit):
    code, out, err, seconds = hps(args, timeout=60)
    assert code == 2 and "Traceback" not in err, err
    assert "--set" in err and field in err and limit in err, err
    assert seconds < 30 and out == ""


def test_the_table_size_checked_before_building_is_the_size_built():
    """row_count(), which bounds a table before it is built, counts exactly the rows built."""
    for name in ZOO:
        arch = FACTORIES[base_workload(name)].architecture.replaced(hyperparameters(name))
        assert arch.row_count() == len(ZOO[name]().layers), name
    for name, changes in [("transformer", {"layers": 7}), ("gnmt", {"encoder_layers": 3}), ("dlrm", {"top": (8,)})]:
        arch = FACTORIES[name].architecture.replaced({**hyperparameters(name), **changes})
        assert arch.row_count() == len(ZOO[name](**changes).layers), name


# ------------------------------------------------------------------ searches past memory


def test_search_of_a_thousand_layers_plans_within_bounded_memory():
    """Under 2 GiB of address space the exact solver plans it; the searches whose tables would
    not fit are skipped with their estimates instead of running out of memory."""
    args = ["search", "--workload", "transformer", "--set", "layers=1000", "--json"]
    code, out, err, _ = hps(args, timeout=240)
    assert code == 0 and "Traceback" not in err, err
    report = json.loads(out)
    assert report["method"] == "exact" and report["feasible"] and len(report["schedule"]) == 2003
    assert "GiB" in report["skipped"]["genetic"]


def test_one_search_method_past_memory_is_refused_with_its_estimate_and_exit_2():
    args = ["search", "--workload", "transformer", "--set", "layers=1000", "--method", "single"]
    code, out, err, _ = hps(args, timeout=240)
    assert code == 2 and "Traceback" not in err, err
    assert err.startswith("hps search: error:") and "GiB" in err and "memory" in err, err


# ------------------------------------------------------------------ names with control characters


def hostile_inputs(folder: Path) -> tuple[Path, Path, Path]:
    """(catalogue, workload, network) files whose names hold ESC [31m."""
    catalog = (ROOT / "topologies/catalogs/small.toml").read_text()
    catalog = catalog.replace('name = "small"', 'name = "small\\u001b[31m"')
    catalog = catalog.replace('name = "cpu"', 'name = "cpu\\u001b[31m"')
    workload = folder / "w.toml"
    assert main(["workload", "export", "mlp", "--out", str(workload)]) == 0
    text = workload.read_text().replace('name = "mlp"', 'name = "mlp\\u001b[31m"')
    text = text.replace('name = "fc1"', 'name = "fc1\\u001b[31m"')
    text += '[layer.measured_time_s]\n"cpu\\u001b[31m" = 1e-6\n'
    network = (ROOT / "topologies/networks/3d-torus-4x4x4.toml").read_text()
    network = network.replace('name = "3d-torus-4x4x4"', 'name = "net\\u001b[31m"')
    paths = folder / "c.toml", workload, folder / "n.toml"
    for path, content in zip(paths, (catalog, text, network), strict=True):
        path.write_text(content)
    return paths


def strings(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *strings(v)]]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def test_names_with_escape_sequences_are_shown_escaped_in_text_and_json(tmp_path, capsys):
    catalog, workload, network = hostile_inputs(tmp_path)
    assert set(load_workload(workload).layers[-1].measured_time) == {f"cpu{SHOWN}"}
    search = ["search", "--method", "exact", "--catalog", str(catalog), "--workload", str(workload)]
    assert main([*search, "--throughput", "1e5"]) == 0
    text = capsys.readouterr().out
    assert ESC not in text
    assert all(f"{name}{SHOWN}" in text for name in ("small", "mlp", "fc1", "cpu")), text
    assert main([*search, "--throughput", "1e5", "--json"]) == 0
    shown = strings(json.loads(capsys.readouterr().out))
    assert f"cpu{SHOWN}" in shown and not any(ESC in s for s in shown)
    assert main(["collective", "--network", str(network), "--size", "1MiB"]) == 0
    text = capsys.readouterr().out
    assert ESC not in text and f"net{SHOWN}" in text


# ------------------------------------------------------------------ output modes


@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o077, 0o600, 0o700), (0o022, 0o644, 0o755)])
def test_outputs_get_the_modes_the_umask_leaves(tmp_path, umask, file_mode, folder_mode):
    out = tmp_path / "new" / "mlp.toml"
    code, _, err, _ = hps(["workload", "export", "mlp", "--out", str(out)], umask=umask, timeout=60)
    assert code == 0, err
    assert stat.S_IMODE(out.stat().st_mode) == file_mode
    assert stat.S_IMODE(out.parent.stat().st_mode) == folder_mode


# ------------------------------------------------------------------ files run as Python


@pytest.mark.parametrize("command", ["train", "run"])
def test_a_toml_experiment_is_refused_without_being_run(tmp_path, command):
    marker = tmp_path / "ran"
    experiment = tmp_path / "x.toml"
    experiment.write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    code, _, err, _ = hps([command, str(experiment), "--out", str(tmp_path / "out")], timeout=120)
    assert code == 2 and "Traceback" not in err, err
    assert str(experiment) in err and ".py" in err
    assert not marker.exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["run"], ["train"], ["workload", "derive"]])
def test_help_says_the_file_is_executed_as_python_and_must_be_trusted(command, capsys):
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "executed as Python" in text and "trust" in text


def test_readme_says_which_files_are_executed_as_python():
    readme = " ".join((ROOT / "README.md").read_text().split())
    trust = readme[readme.index("**Trust.**") :][:800]
    assert "executes" in trust and "Python" in trust and "trust" in trust.lower()
    assert all(command in trust for command in ("hps run", "hps train", "hps workload derive"))


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["bench", "placement", "--exact-layers", "100000000"], "--exact-layers"),
        (["bench", "placement", "--exact-types", "33"], "--exact-types"),
        (["execute", "--catalog", "small", "--workload", "mlp", "--schedule", "cpu,cpu,cpu,cpu", "--steps", "10**12"],
         "--steps"),
    ],
)  # fmt: skip
def test_benchmark_grids_and_executed_steps_are_bounded_before_any_work(argv, flag, capsys):
    """A benchmark grid past the workload/catalogue limits and an execution of 10^12 steps exit
    2 at once naming the flag (they used to run for as long as they were let)."""
    argv = [a.replace("10**12", str(10**12)) for a in argv]
    started = time.perf_counter()
    code, _, err = run_cli_output(argv, capsys)
    assert code == 2 and err.startswith(f"hps {argv[0]}: error: {flag}") and "Traceback" not in err
    assert time.perf_counter() - started < 10.0
