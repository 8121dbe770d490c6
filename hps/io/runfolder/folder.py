"""`run_folder`: one run in a run folder, from the checks before work to the manifest's last word.

In order: the files hps owns there (lock, manifest, metrics, checkpoints) must not be symbolic
links; the folder (and the subfolders the run writes into) must take a write and hold
`preflight.min_free_bytes()`; the folder's lock is taken (RunFolderBusy naming the holder when
another run has it); the run is added to `manifest.json`. When the block ends the run's status
is recorded (complete, stopped, failed) and the lock released, whatever ended it. Nothing here
prints."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hps.io.runfolder import lock, manifest, owned, preflight, stop

OWNED = (lock.LOCK_NAME, manifest.MANIFEST_NAME, "metrics.jsonl", "checkpoints")


@dataclass(frozen=True)
class RunFolder:
    """A run folder held by this run: its lock (None where not locked) and open manifest (None
    on the processes of a multi-process run that do not write it)."""

    path: Path
    lock: lock.RunFolderLock | None
    manifest: manifest.Manifest | None

    def wrote(self, *paths: str | os.PathLike) -> None:
        """Record `paths` as this run's outputs (nothing where this process keeps no manifest)."""
        if self.manifest is not None:
            self.manifest.wrote(*paths)

    def stale_notice(self) -> str | None:
        return lock.stale_notice(self.lock)


def this_command() -> list[str]:
    """This process's command line as a manifest records it, "hps" first."""
    return ["hps", *sys.argv[1:]]


@contextmanager
def run_folder(
    folder: str | os.PathLike,
    command: list[str] | None = None,
    *,
    subfolders: tuple[str, ...] = (),
    enabled: bool = True,
) -> Iterator[RunFolder]:
    """Hold run folder `folder` for one run of `command` (argv, "hps" first; default this
    process's). subfolders: folders of it the run writes into, probed too. Not `enabled` (the
    other processes of a multi-process run): nothing is checked, locked or recorded."""
    folder = Path(folder)
    if not enabled:
        yield RunFolder(path=folder, lock=None, manifest=None)
        return
    command = command or this_command()
    owned.refuse_links(folder, OWNED)
    preflight.check_writable(folder, *(folder / name for name in subfolders))
    run_id = manifest.new_run_id()
    with lock.holding(folder, command=command, run_id=run_id) as held:
        with stop.deferred():
            record = manifest.begin(folder, command, run_id)
        status = "failed"
        try:
            yield RunFolder(path=folder, lock=held, manifest=record)
            status = "complete"
        except KeyboardInterrupt:
            status = "stopped"
            raise
        finally:
            try:
                record.end(status)
            except OSError:
                if status == "complete":
                    raise


@contextmanager
def output_file(path: str | os.PathLike, command: list[str] | None = None) -> Iterator[dict]:
    """Hold the one output file `path` of a run (`hps execute --out`): its folder must take a
    write and hold the free space a run needs, and `<path>.lock` (deleted on release) is taken,
    RunFolderBusy naming the run writing it. Yields {"run_id", "command"}, what the file records
    of the run that produced it."""
    path = Path(path)
    command = command or this_command()
    preflight.check_writable(path.absolute().parent)
    run_id = manifest.new_run_id()
    lock_file = path.with_name(path.name + ".lock")
    with lock.holding(path, lock_file=lock_file, removable=True, command=command, run_id=run_id, what="output"):
        yield {"run_id": run_id, "command": shlex.join(command)}
