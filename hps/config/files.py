"""Writing output files: checked before the work starts, written atomically when it is done.

Every file hps writes (plans, reports, workload tables, figures, metrics) goes through
`atomic_write`: a temporary file in the same folder, then `os.replace`, so an interrupted or
failed write never leaves a half-written file, and a failure leaves no temporary file behind.
`check_output_path` runs before a command's long work, so an unwritable `--out` fails at once
(a ConfigError naming the flag) instead of after minutes of profiling or training.

Files and folders hps creates get the modes the umask leaves: a file 0o666 & ~umask (0o644 under
the usual umask 0o022, 0o600 under 0o077), a folder 0o777 & ~umask.
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from hps.errors import ConfigError


def _nearest_existing(path: Path) -> Path:
    """`path` itself or its closest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_folder(folder: Path, flag: str, shown: str) -> None:
    """ConfigError unless `folder` is, or can be created as, a writable directory."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise ConfigError(flag, "", f"cannot write {shown}: {existing} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(flag, "", f"cannot write {shown}: {existing} is not writable")


def check_output_path(path: str | os.PathLike, flag: str) -> Path:
    """The output file `path` as a Path; ConfigError naming `flag` when it is a directory or its
    folder cannot be written (a missing folder is fine: `atomic_write` creates it)."""
    target = Path(path).absolute()
    if target.is_dir():
        raise ConfigError(flag, "", f"{path} is a directory; give a file name")
    _check_folder(target.parent, flag, str(path))
    return Path(path)


def check_output_dir(path: str | os.PathLike, flag: str) -> Path:
    """The output folder `path` (a run folder) as a Path; ConfigError naming `flag` when it is a
    file or cannot be created and written."""
    folder = Path(path).absolute()
    if folder.exists() and not folder.is_dir():
        raise ConfigError(flag, "", f"{path} is a file; give a folder")
    _check_folder(folder, flag, str(path))
    return Path(path)


FILE_MODE = 0o666
"""The mode an output file asks for; the umask takes its bits away, as for any file `open` makes."""

_UMASK_LOCK = threading.Lock()


@functools.cache
def process_umask() -> int:
    """This process's umask, read once: from /proc/self/status where the kernel shows it (Linux
    4.7 on), which leaves the process as it is; else set and restored at once under a lock (a
    umask cannot otherwise be read without setting it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            found = re.search(r"^Umask:\s*([0-7]+)$", status.read(), re.MULTILINE)
        if found:
            return int(found.group(1), 8)
    except (OSError, UnicodeDecodeError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode of a file hps writes: FILE_MODE less the umask's bits."""
    return FILE_MODE & ~process_umask()


def atomic_write(path: str | os.PathLike, write: Callable[[str], None], *, suffix: str = ".tmp") -> None:
    """Call write(temporary path) for a file in `path`'s folder (created if missing), then move
    it onto `path`. The file gets `file_mode()` (0o666 less the umask), a folder it creates 0o777
    less the umask. On any failure the temporary file is removed and `path` is left as it was;
    an OSError becomes a ConfigError naming `path`."""
    target = os.path.abspath(path)
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        handle, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=suffix, dir=os.path.dirname(target)
        )
    except OSError as error:
        raise ConfigError(str(path), "", f"cannot write: {error.strerror or error}") from None
    os.close(handle)
    try:
        write(tmp)
        os.chmod(tmp, file_mode())  # mkstemp creates 0600; an output is a file as `open` makes one
        os.replace(tmp, target)
    except OSError as error:
        raise ConfigError(str(path), "", f"cannot write: {error.strerror or error}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically, flushed to disk before the rename."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())

    atomic_write(path, write)
