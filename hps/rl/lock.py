"""An exclusive lock on a run folder, so two training runs never write into one `--out`.

The lock is `fcntl.flock(LOCK_EX | LOCK_NB)` on `<folder>/.lock`. The holder writes who it is
into the file as JSON: {"pid", "host", "started" (UTC, ISO 8601), "command"}; a clean release
empties the file again. A second run finds the lock taken and gets `RunFolderBusy` at once,
naming the folder and the holder. The kernel drops a flock when its process dies (SIGKILL
included), so a run that died leaves only its JSON behind: the next run gets the lock and
reports, in `RunFolderLock.stale`, the dead holder it took over from. The file itself is never
deleted, since deleting a lock file lets two processes lock two different files. Nothing here
prints.
"""

from __future__ import annotations

import datetime
import fcntl
import json
import os
import shlex
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hps.errors import ConfigError, RunFolderBusy

LOCK_NAME = ".lock"
READ_TRIES = 20
"""Reads of a busy lock file (READ_WAIT_S apart) while its new holder has not yet written it."""
READ_WAIT_S = 0.05


@dataclass(frozen=True)
class RunFolderLock:
    """A held run-folder lock. path: the lock file; holder: what this process wrote into it;
    stale: the record of a dead holder whose lock this one took over, else None."""

    path: Path
    holder: dict
    stale: dict | None
    fd: int


def holder_record() -> dict:
    """Who this process is, as the lock file records it."""
    return {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": shlex.join([os.path.basename(sys.executable), *sys.argv]),
    }


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


def busy(folder: Path, fd: int) -> RunFolderBusy:
    """RunFolderBusy naming `folder` and its holder (read while it may still be writing)."""
    record = None
    for _ in range(READ_TRIES):
        record = read_record(fd)
        if record is not None:
            break
        time.sleep(READ_WAIT_S)
    return RunFolderBusy(
        f"{folder}: another run is training in this run folder ({describe(record)}); "
        "wait for it to end, or give another --out"
    )


def acquire(folder: str | os.PathLike) -> RunFolderLock:
    """Lock the existing run folder `folder`: RunFolderBusy when a live process holds it,
    ConfigError when the lock file cannot be opened."""
    folder = Path(folder)
    path = folder / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise ConfigError(str(path), "", f"cannot open the run folder's lock: {error.strerror or error}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        error = busy(folder, fd)
        os.close(fd)
        raise error from None
    stale = read_record(fd)
    holder = holder_record()
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode(), 0)
    os.fsync(fd)
    return RunFolderLock(path=path, holder=holder, stale=stale, fd=fd)


def release(lock: RunFolderLock) -> None:
    """Empty the lock file and unlock it."""
    try:
        os.ftruncate(lock.fd, 0)
    finally:
        fcntl.flock(lock.fd, fcntl.LOCK_UN)
        os.close(lock.fd)


@contextmanager
def holding(folder: str | os.PathLike, *, enabled: bool = True) -> Iterator[RunFolderLock | None]:
    """Hold the lock of run folder `folder` for the block (released on errors too); yields
    None and locks nothing when not `enabled` (the non-primary processes of a multi-process run)."""
    if not enabled:
        yield None
        return
    lock = acquire(folder)
    try:
        yield lock
    finally:
        release(lock)


def stale_notice(lock: RunFolderLock | None) -> str | None:
    """One line saying which dead holder's lock `lock` took over, or None."""
    if lock is None or lock.stale is None:
        return None
    return f"{lock.path.parent}: took over the stale lock of a run that is gone ({describe(lock.stale)})"
