"""Every Python example in the README and docs/ runs as written, in a fresh interpreter started
in an empty folder (so it uses the installed hps, not files beside it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[str, str]]:
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for i, code in enumerate(BLOCK.findall(path.read_text())):
            found.append((f"{path.relative_to(REPO)}[{i}]", code))
    return found


def test_the_readme_and_the_api_document_hold_examples():
    names = [name for name, _ in examples()]
    assert any(name.startswith("README.md") for name in names)
    assert sum(name.startswith("docs/api.md") for name in names) >= 2


@pytest.mark.parametrize(("name", "code"), examples(), ids=[name for name, _ in examples()])
def test_example_runs_as_written(name, code, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}  # the example sets its own
    env["PYTHONPATH"] = ""
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{name}:\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr and done.stdout.strip()
