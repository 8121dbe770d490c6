"""The built wheel is a complete install: shipped catalogues and networks found from any folder.

The slow tests build the wheel from a copy of the checkout, install it into a fresh virtual
environment (the dependencies come from the running one through a .pth file, so nothing is
downloaded for the install) and run the installed `hps` from a folder outside the checkout.
"""

from __future__ import annotations

import ast
import os
import shutil
import site
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]
SHIPPED_NETWORKS = sorted(p.stem for p in (ROOT / "topologies" / "networks").glob("*.toml"))


def test_pyproject_lists_every_package_under_hps_and_the_shipped_topologies():
    listed = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert sorted(listed) == sorted([*find_packages(str(ROOT), include=["hps", "hps.*"]), "hps.topologies"])


def test_nothing_in_hps_imports_the_tests():
    for path in (ROOT / "hps").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            assert not any(n == "tests" or n.startswith("tests.") for n in names), path


class Installed:
    """A fresh virtual environment holding the wheel built from this checkout."""

    def __init__(self, root: Path):
        # A copy, so that setuptools' build/ and egg-info stay out of the checkout.
        source = root / "source"
        source.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, source / name)
        junk = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
        for name in ("hps", "topologies"):
            shutil.copytree(ROOT / name, source / name, ignore=junk)
        dist = root / "dist"
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.env["JAX_PLATFORMS"] = "cpu"
        # pip's isolated build, as `pip install .` does (the running env may lack a wheel builder).
        self._check([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(source)], root)
        (self.wheel,) = dist.glob("hps-*.whl")

        self.venv = root / "venv"
        venv.create(self.venv, with_pip=False)
        self.python = self.venv / "bin" / "python"
        pip = [sys.executable, "-m", "pip", "--python", str(self.python)]
        self._check([*pip, "install", "--no-deps", "--no-index", "-q", str(self.wheel)], root)
        (purelib,) = self.venv.glob("lib/python*/site-packages")
        (purelib / "running-env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
        self.cwd = root / "elsewhere"
        self.cwd.mkdir()

    def _check(self, argv: list[str], cwd: Path) -> None:
        done = subprocess.run(argv, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr

    def hps(self, *args: str) -> str:
        """stdout of the installed console script, run outside the checkout; it must succeed."""
        argv = [str(self.venv / "bin" / "hps"), *args]
        done = subprocess.run(argv, cwd=self.cwd, env=self.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    return Installed(tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
def test_wheel_ships_the_topologies_and_the_references(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    assert "hps/topologies/catalogs/cloud-2024.toml" in names
    assert {f"hps/topologies/networks/{n}.toml" for n in SHIPPED_NETWORKS} <= set(names)
    assert "hps/reference/__init__.py" in names
    assert not any(n.startswith(("tests/", "topologies/")) for n in names)


@pytest.mark.slow
def test_installed_hps_and_its_shipped_data_come_from_the_wheel(installed):
    code = "import hps, hps.config.paths as p; print(hps.__file__); print(p.TOPOLOGIES)"
    done = subprocess.run(
        [str(installed.python), "-c", code], cwd=installed.cwd, env=installed.env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    module, topologies = (Path(line).resolve() for line in done.stdout.split())
    assert module.is_relative_to(installed.venv.resolve())
    assert topologies.is_relative_to(installed.venv.resolve()) and topologies.name == "topologies"


@pytest.mark.slow
def test_installed_search_finds_the_shipped_catalogue(installed):
    out = installed.hps("search", "--workload", "ctr-dnn", "--method", "greedy")
    assert "ctr-dnn on cloud-2024" in out


@pytest.mark.slow
def test_installed_collective_suite_covers_every_shipped_network(installed):
    out = installed.hps("collective", "--suite")
    assert all(name in out for name in SHIPPED_NETWORKS)


@pytest.mark.slow
def test_installed_workload_list_shows_the_zoo(installed):
    out = installed.hps("workload", "list")
    assert "ctr-dnn" in out and "bert-base" in out
