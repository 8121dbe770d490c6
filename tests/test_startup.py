"""CLI start-up: `hps --help`, `hps COMMAND --help` and `hps workload list` stay fast because the
command modules import JAX, Flax, Orbax and plotting only inside the functions that run a command.

Each case runs in a fresh interpreter (this test process has JAX imported already) and reports
which heavy modules `sys.modules` holds after the command.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import hps
from hps.cli.main import build_parser

HEAVY = ("jax", "jaxlib", "flax", "optax", "orbax", "chex", "matplotlib", "numpy", "scipy")
TRAINING = ("flax", "optax", "orbax", "chex")

PROBE = (
    f"HEAVY = {HEAVY!r}\n"
    + """
import json, sys
from hps.cli.main import main
try:
    status = main(sys.argv[1:])
except SystemExit as exit:
    status = exit.code
heavy = sorted({name.partition(".")[0] for name in sys.modules} & set(HEAVY))
print(json.dumps({"status": status, "heavy": heavy}), file=sys.stderr)
"""
)


def _env(**extra) -> dict:
    """This checkout first on the path, so the subprocess imports the hps under test."""
    root = str(Path(hps.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
    return dict(os.environ, PYTHONPATH=path, JAX_PLATFORMS="cpu", **extra)


def _probe(argv: list[str], **env) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=_env(**env), capture_output=True, text=True, timeout=120
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices) if actions else {}


def _help_cases() -> list[list[str]]:
    cases = [[]]
    for name, sub in _subcommands(build_parser()).items():
        cases.append([name])
        cases.extend([name, action] for action in _subcommands(sub))
    return cases


def test_every_command_has_a_help_case():
    cases = {" ".join(c) for c in _help_cases()}
    assert {"search", "execute", "quickstart", "run", "workload list", "workload derive"} <= cases


@pytest.mark.parametrize("argv", _help_cases(), ids=lambda argv: " ".join(argv) or "hps")
def test_help_imports_no_heavy_module(argv):
    result = _probe([*argv, "--help"])
    assert result["status"] == 0
    assert result["heavy"] == [], f"`hps {' '.join(argv)} --help` imported {result['heavy']}"


def test_workload_list_imports_no_training_library(tmp_path):
    result = _probe(["workload", "list"], JAX_COMPILATION_CACHE_DIR=str(tmp_path))
    assert result["status"] == 0
    assert not set(result["heavy"]) & set(TRAINING), result["heavy"]
    assert "jax" not in result["heavy"]


def test_compile_cache_reaches_jax_imported_after_the_command(tmp_path):
    """Before JAX is imported, main() leaves the cache settings in the environment JAX reads."""
    code = (
        "from hps.cli.main import main; main(['workload', 'list']); import jax; "
        "print(jax.config.jax_compilation_cache_dir, jax.config.jax_persistent_cache_min_compile_time_secs)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(JAX_COMPILATION_CACHE_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stdout.split()[-2:] == [str(tmp_path), "0.0"]


def test_search_offers_the_registry_names_without_importing_a_planner():
    code = (
        "import sys; from hps.cli.main import build_parser; from hps.methods.registry import planner_names; "
        "parser = build_parser(); search = parser._subparsers._group_actions[0].choices['search']; "
        "method = next(a for a in search._actions if a.dest == 'method'); "
        "assert tuple(method.choices) == ('all', *planner_names()), method.choices; "
        "loaded = sorted(m for m in sys.modules if m.startswith(('hps.methods', 'hps.costmodel', 'jax'))); "
        "assert loaded == ['hps.costmodel', 'hps.costmodel.clocks', 'hps.costmodel.clocks.base', 'hps.methods', "
        "'hps.methods.problem', 'hps.methods.registry'], loaded"
    )
    subprocess.run([sys.executable, "-c", code], env=_env(), check=True, capture_output=True, timeout=120)


def _seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=_env(), capture_output=True, check=True, timeout=120)
    return time.perf_counter() - start


def test_help_is_about_as_fast_as_importing_numpy():
    """Best of 5 each, interleaved, so load on the machine hits both sides alike."""
    help_s = baseline_s = float("inf")
    for _ in range(5):
        help_s = min(help_s, _seconds([sys.executable, "-m", "hps.cli.main", "--help"]))
        baseline_s = min(baseline_s, _seconds([sys.executable, "-c", "import argparse, numpy"]))
    assert help_s <= 3 * baseline_s, f"hps --help {help_s:.3f} s vs import argparse, numpy {baseline_s:.3f} s"
