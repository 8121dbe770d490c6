"""`manifest.json`: what produced each output of a run folder.

    {"format": 1,
     "runs": [{"run_id", "command", "arguments", "pid", "host", "started", "ended", "status",
               "changes"?}, …],          oldest first; status: running, complete, stopped, failed
     "outputs": {"<path relative to the folder>": "<run id of the run that last wrote it>", …}}

A run is added (status "running") when it takes the folder's lock and closed when it ends, so
the last run's status says whether the folder's outputs are whole. An output is recorded right
after it is written, in the same `stop.deferred` block, so no stop lands between the file and its
record: two runs' outputs side by side are told apart by their run ids. A manifest that is a
symbolic link or not one hps wrote is refused (ConfigError naming it). Nothing here prints.
"""

from __future__ import annotations

import datetime
import json
import os
import secrets
import shlex
import socket
from dataclasses import dataclass
from pathlib import Path

from hps.config.files import atomic_write_text
from hps.errors import ConfigError
from hps.io.runfolder import owned

MANIFEST_NAME = "manifest.json"
FORMAT = 1


def now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def new_run_id() -> str:
    """A run id: the UTC start time and six random hex digits, e.g. 20250101T120000Z-3fa2c1."""
    return f"{datetime.datetime.now(datetime.UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def read(folder: Path) -> dict:
    """The manifest of `folder` (an empty one when there is none); ConfigError when it is a link
    or not a manifest."""
    path = folder / MANIFEST_NAME
    text = owned.read_text(path)
    if text is None:
        return {"format": FORMAT, "runs": [], "outputs": {}}
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if not (
        isinstance(document, dict)
        and document.get("format") == FORMAT
        and isinstance(document.get("runs"), list)
        and isinstance(document.get("outputs"), dict)
    ):
        raise ConfigError(str(path), "", "not a run-folder manifest hps wrote; move it away to use this folder")
    return document


@dataclass
class Manifest:
    """The open manifest of a run folder, with this run's record last in document["runs"]."""

    folder: Path
    run_id: str
    document: dict

    @property
    def run(self) -> dict:
        return self.document["runs"][-1]

    def save(self) -> None:
        atomic_write_text(self.folder / MANIFEST_NAME, json.dumps(self.document, indent=2) + "\n")

    def wrote(self, *paths: str | os.PathLike) -> None:
        """Record `paths` (files or folders in the run folder) as this run's outputs."""
        for path in paths:
            self.document["outputs"][Path(os.path.relpath(path, self.folder)).as_posix()] = self.run_id
        self.save()

    def forget(self, *paths: str | os.PathLike) -> None:
        """Drop `paths` (removed from the folder) from the outputs."""
        for path in paths:
            self.document["outputs"].pop(Path(os.path.relpath(path, self.folder)).as_posix(), None)
        self.save()

    def note(self, **fields) -> None:
        """Add `fields` to this run's record (e.g. changes=… of a resume with other settings)."""
        self.run.update(fields)
        self.save()

    def end(self, status: str) -> None:
        self.run.update(status=status, ended=now())
        self.save()


def begin(folder: Path, command: list[str], run_id: str | None = None) -> Manifest:
    """Add a run of `command` (argv, "hps" first) to the manifest of `folder`, status "running"."""
    document = read(folder)
    run_id = run_id or new_run_id()
    document["runs"].append(
        {
            "run_id": run_id,
            "command": shlex.join(command),
            "arguments": list(command[1:]),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": now(),
            "ended": None,
            "status": "running",
        }
    )
    manifest = Manifest(folder=folder, run_id=run_id, document=document)
    manifest.save()
    return manifest
