"""Every file in experiments/ is a config module `hps run` runs, and still loads: it gives a
registered, valid config (a moved import breaks here, not in a user's hands). No experiment
writes a file but through the runner and the atomic writer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from hps.studies import experiment_kind_of, load_config
from tests.helpers import called_name

REPO = Path(__file__).parent.parent
EXPERIMENTS = sorted((REPO / "experiments").glob("*.py"))


def defines_config(path: Path) -> bool:
    return "def config(" in path.read_text()


def test_every_experiment_file_is_a_config_module():
    assert len(EXPERIMENTS) >= 9
    assert [p.name for p in EXPERIMENTS if not defines_config(p)] == []


@pytest.mark.parametrize("path", EXPERIMENTS, ids=lambda p: p.name)
def test_config_modules_give_a_valid_registered_config(path):
    config = load_config(path)
    assert config.name == path.stem
    assert len(experiment_kind_of(config).items(config)) >= 1


WRITERS = {"open", "write_text", "write_bytes", "savefig", "dump", "save", "savez", "to_csv"}
"""Calls that write a file directly (json.dump, np.save, fig.savefig, Path.write_text, ...)."""
ATOMIC = {"checkpoint.save"}
"""hps.rl.checkpoint.save: orbax writes a step to a temporary folder and renames it."""
DELIBERATE = {"hostile.py": {"os.open"}, "hostile_setup.py": {"path.write_bytes", "?.open", "os.open"}}
"""The hostile sweep flips a bit of a checkpoint in place on purpose, as a failing disk does; its
setup writes inputs in other encodings as bytes, logs a command's output to files, and holds a
FIFO open as its reader."""


@pytest.mark.parametrize(
    "path",
    [*EXPERIMENTS, *sorted((REPO / "hps" / "experiments").glob("*.py"))],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_experiments_write_files_only_through_the_atomic_writer(path):
    """The runner writes results.json, items, report.md (atomic_write_text) and the figures
    (save_figure); an experiment never opens a file for writing itself."""
    tree = ast.parse(path.read_text(), str(path))
    called = [called_name(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    allowed = ATOMIC | DELIBERATE.get(path.name, set())
    assert not [c for c in called if c.rpartition(".")[2] in WRITERS and c not in allowed]
