"""Before any work: a run folder (or an output file's folder) must take a write and hold enough
free space, so a folder that cannot be written fails at once, not after a chunk of training.

Root passes every `os.access` check, so writability is probed: a small file is created (never
through a link), written, synced and removed in each folder the run writes into. Free space is
`shutil.disk_usage` against MIN_FREE_BYTES (HPS_MIN_FREE_MB overrides it, in MiB; 0 turns the
check off). Nothing here prints."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from hps.errors import CannotWrite

MIN_FREE_BYTES = 64 * 2**20
"""The least free space a run starts with: several checkpoints of the default policies and their
metrics, figures and reports."""
PROBE_BYTES = 4096


def min_free_bytes() -> int:
    """MIN_FREE_BYTES, or HPS_MIN_FREE_MB MiB when that is set to a whole number ≥ 0."""
    text = os.environ.get("HPS_MIN_FREE_MB", "")
    return int(text) * 2**20 if text.isdigit() else MIN_FREE_BYTES


def failure(path: str | os.PathLike, error: OSError, doing: str = "cannot write") -> CannotWrite:
    """CannotWrite naming `path` and the cause in words."""
    cause = error.strerror or str(error)
    hint = " (free some space or give another --out)" if error.errno in (errno.ENOSPC, errno.EDQUOT) else ""
    return CannotWrite(f"{path}: {doing}: {cause}{hint}")


def probe(folder: Path) -> None:
    """CannotWrite unless a file can be created, written and synced in `folder`."""
    path = folder / f".hps-write-probe-{os.getpid()}"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, b"\0" * PROBE_BYTES)
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(path)
    except OSError as error:
        raise failure(folder, error, "cannot write into this folder") from None


def check_free_space(folder: Path, minimum: int | None = None) -> None:
    """CannotWrite when the file system of `folder` has less than `minimum` bytes free
    (default `min_free_bytes()`)."""
    minimum = min_free_bytes() if minimum is None else minimum
    free = shutil.disk_usage(folder).free
    if free < minimum:
        raise CannotWrite(
            f"{folder}: {free / 2**20:.1f} MiB free; a run needs at least {minimum / 2**20:.0f} MiB "
            "(free some space, give another --out, or set HPS_MIN_FREE_MB)"
        )


def check_writable(*folders: Path) -> None:
    """Create each of `folders` (and its parents) and probe it, then check the free space of the
    first: CannotWrite naming the folder that fails."""
    for folder in folders:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise failure(folder, error, "cannot create the folder") from None
        probe(folder)
    check_free_space(folders[0])
