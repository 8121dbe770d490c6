"""An exclusive lock on a run folder, so two runs never write into one `--out` (`hps train`,
`hps run`, `hps quickstart`, and `hps execute --out` for its one file).

The lock is `fcntl.flock(LOCK_EX | LOCK_NB)` on `<folder>/.lock`. The holder writes who it is
into the file as JSON: {"pid", "host", "started" (UTC, ISO 8601), "command", "run_id"}; a clean
release empties the file again. A second run finds the lock taken and gets `RunFolderBusy` at
once, naming the folder and the holder. The kernel drops a flock when its process dies (SIGKILL
included), so a run that died leaves only its JSON behind: the next run gets the lock and
reports, in `RunFolderLock.stale`, the dead holder it took over from. A run folder's lock file
is never deleted, since deleting a lock file lets two processes lock two different files. A
lock beside a single output file (`removable`) is deleted on release, while held; whoever
locked the deleted file sees that its path is gone, and locks the new file instead.

The lock file is opened without following a symbolic link (O_NOFOLLOW) and must be a regular
file: a `.lock` link to a file elsewhere is refused with a ConfigError naming it, and its target
is neither written nor truncated. Nothing here prints.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import shlex
import socket
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hps.errors import ConfigError, RunFolderBusy
from hps.io.runfolder.owned import LINK_PROBLEM

LOCK_NAME = ".lock"
READ_TRIES = 20
"""Reads of a busy lock file (READ_WAIT_S apart) while its new holder has not yet written it."""
READ_WAIT_S = 0.05


@dataclass(frozen=True)
class RunFolderLock:
    """A held run-folder lock. path: the lock file; holder: what this process wrote into it;
    stale: the record of a dead holder whose lock this one took over, else None; removable:
    the file is deleted on release."""

    path: Path
    holder: dict
    stale: dict | None
    fd: int
    removable: bool = False


def holder_record(command: list[str] | None = None, run_id: str | None = None) -> dict:
    """Who this process is, as the lock file records it: `command` (default this process's
    argv) and the run id of the manifest it writes, when given."""
    record = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join(command or [os.path.basename(sys.executable), *sys.argv]),
    }
    if run_id is not None:
        record["run_id"] = run_id
    return record


def describe(record: dict | None) -> str:
    """A holder record in words: "PID 123 on host h since 2025-01-01T00:00:00+00:00: hps train …"."""
    if not record:
        return "a process that has not yet written its PID"
    return (
        f"PID {record.get('pid', '?')} on {record.get('host', '?')} since {record.get('started', '?')}: "
        f"{record.get('command', '?')}"
    )


def parse_record(text: str) -> dict | None:
    """The holder record in a lock file's text; None when it is empty or not a record."""
    try:
        record = json.loads(text)
    except ValueError:
        return None
    return record if isinstance(record, dict) and "pid" in record else None


def read_record(fd: int) -> dict | None:
    """The holder record of the open lock file `fd`."""
    return parse_record(os.pread(fd, 1 << 16, 0).decode("utf-8", "replace"))


def busy(folder: Path, fd: int, what: str = "run folder") -> RunFolderBusy:
    """RunFolderBusy naming `folder` (a `what`) and its holder (read while it may still be writing)."""
    record = None
    for _ in range(READ_TRIES):
        record = read_record(fd)
        if record is not None:
            break
        time.sleep(READ_WAIT_S)
    return RunFolderBusy(
        f"{folder}: another run is writing into this {what} ({describe(record)}); "
        "wait for it to end, or give another --out"
    )


def open_lock_file(path: Path) -> int:
    """The lock file `path` opened for reading and writing (created when missing), never through
    a symbolic link; ConfigError naming it when it is a link, not a regular file, or cannot be opened."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
    except OSError as error:
        if os.path.islink(path):
            problem = LINK_PROBLEM
        else:
            problem = f"cannot open the run folder's lock: {error.strerror or error}"
        raise ConfigError(str(path), "", problem) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ConfigError(str(path), "", "is not a regular file; hps keeps its lock there: remove it")
    return fd


def still_linked(fd: int, path: Path) -> bool:
    """Whether `path` still names the open file `fd` (a removable lock deleted by its last holder does not)."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def acquire(
    folder: str | os.PathLike,
    *,
    lock_file: str | os.PathLike | None = None,
    removable: bool = False,
    command: list[str] | None = None,
    run_id: str | None = None,
    what: str = "run folder",
) -> RunFolderLock:
    """Lock the existing run folder `folder` (its `.lock`, or `lock_file` when given; `removable`:
    delete that file on release): RunFolderBusy naming `folder` as a `what` when a live process
    holds it, ConfigError when the lock file is a link or cannot be opened. `command` and
    `run_id` go into the holder record."""
    folder = Path(folder)
    path = Path(lock_file) if lock_file is not None else folder / LOCK_NAME
    while True:
        fd = open_lock_file(path)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            error = busy(folder, fd, what)
            os.close(fd)
            raise error from None
        if not removable or still_linked(fd, path):
            break
        os.close(fd)  # its last holder deleted it: lock the file now at `path`
    stale = read_record(fd)
    holder = holder_record(command, run_id)
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
    os.fsync(fd)
    return RunFolderLock(path=path, holder=holder, stale=stale, fd=fd, removable=removable)


def release(lock: RunFolderLock) -> None:
    """Empty the lock file (delete it when removable) and unlock it."""
    try:
        if lock.removable:
            lock.path.unlink(missing_ok=True)
        else:
            os.ftruncate(lock.fd, 0)
    finally:
        fcntl.flock(lock.fd, fcntl.LOCK_UN)
        os.close(lock.fd)


@contextmanager
def holding(folder: str | os.PathLike, *, enabled: bool = True, **options) -> Iterator[RunFolderLock | None]:
    """Hold the lock of run folder `folder` for the block (released on errors too); yields
    None and locks nothing when not `enabled` (the non-primary processes of a multi-process
    run). `options`: those of `acquire`."""
    if not enabled:
        yield None
        return
    lock = acquire(folder, **options)
    try:
        yield lock
    finally:
        release(lock)


def stale_notice(lock: RunFolderLock | None) -> str | None:
    """One line saying which dead holder's lock `lock` took over, or None."""
    if lock is None or lock.stale is None:
        return None
    return f"{lock.path.parent}: took over the stale lock of a run that is gone ({describe(lock.stale)})"
