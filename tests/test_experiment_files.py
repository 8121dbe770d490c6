"""Every file in experiments/ still loads: config modules give a registered, valid config;
plain scripts import and answer --help (a moved import breaks here, not in a user's hands)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hps.experiments import kind_of, load_config

EXPERIMENTS = sorted((Path(__file__).parent.parent / "experiments").glob("*.py"))


def defines_config(path: Path) -> bool:
    return "def config(" in path.read_text()


@pytest.mark.parametrize("path", [p for p in EXPERIMENTS if defines_config(p)], ids=lambda p: p.name)
def test_config_modules_give_a_valid_registered_config(path):
    config = load_config(path)
    assert config.name == path.stem
    assert len(kind_of(config).items(config)) >= 1


@pytest.mark.parametrize("path", [p for p in EXPERIMENTS if not defines_config(p)], ids=lambda p: p.name)
def test_plain_scripts_import_and_answer_help(path):
    done = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage" in done.stdout
