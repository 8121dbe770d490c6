"""Writing output files: checked before the work starts, written by one writer when it is done.

Every file hps writes (plans, reports, workload tables, figures, run-folder files) goes through
`atomic_write`, which looks at what the output path names, symlinks followed:
- nothing yet, or a regular file: the content goes to a temporary file in the same folder, then
  `os.replace` puts it in place, so an interrupted or failed write never leaves a half-written
  file, and a failure leaves no temporary file behind;
- a character device or a FIFO (`/dev/null`, `/dev/stdout` on a terminal, a named pipe a reader
  waits on): the content is made complete in a temporary file first, then written into the
  device or FIFO directly; the node itself is never replaced. A FIFO no process reads is
  refused (ConfigError) instead of waiting for a reader that may never come;
- a symlink: written through to its target (atomically, when the target is a regular file, or
  created when it is missing); the link stays a link;
- an open descriptor (`/dev/stdout`, `/dev/fd/N`, `/proc/PID/fd/N`): written into whatever it has
  open (a pipe, a terminal, a regular file after what it holds); this process's own descriptor
  through a duplicate, after what the command printed to it, so `--out /dev/stdout > file`
  gets the printed lines and the content in order; never replaced;
- a directory, block device, socket, symlink loop or closed descriptor, a name ending in a
  separator, or a path under something that is not a folder: refused with a ConfigError naming
  the path.
`check_output_path` runs the same checks before a command's long work, so an unwritable `--out`
fails at once (a ConfigError naming the flag) instead of after minutes of profiling or training.
Figures are written in the format their suffix names (`FIGURE_FORMATS`); `check_figure_path`
refuses any other suffix.

Files and folders hps creates get the modes the umask leaves: a file 0o666 & ~umask (0o644 under
the usual umask 0o022, 0o600 under 0o077), a folder 0o777 & ~umask.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from hps.errors import ConfigError

FIGURE_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg"}
"""Figure file suffixes (lower case) and the matplotlib format each is written in."""


def _nearest_existing(path: Path) -> Path:
    """`path` itself or its closest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _folder_problem(folder: Path) -> str | None:
    """Why `folder` cannot be, or be created as, a writable directory; None when it can."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def _check_folder(folder: Path, flag: str, shown: str) -> None:
    """ConfigError unless `folder` is, or can be created as, a writable directory."""
    problem = _folder_problem(folder)
    if problem:
        raise ConfigError(flag, "", f"cannot write {shown}: {problem}")


OPEN_DESCRIPTORS = re.compile(r"/proc/[^/]+(/task/[^/]+)?/fd")
"""The folder of a process's open descriptors: a link in it (`/dev/stdout`, `/dev/fd/1`) names
whatever the descriptor has open, which may have no path at all (a pipe)."""

INTO_STREAM = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
"""How a character device or FIFO is opened: without waiting for a FIFO's reader."""
INTO_DESCRIPTOR_FILE = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC
"""How a regular file reached through an open descriptor is opened: after what it holds."""

SYMLINKS_FOLLOWED = 40
"""Links followed before an output is called a symlink loop (the kernel's own limit)."""


def _follow_links(shown: str, source: str) -> tuple[str, bool]:
    """(`shown` with every symlink followed, whether one of them is an open descriptor). ConfigError
    naming `source` for a symlink loop or a link that cannot be read."""
    path = os.path.abspath(shown)
    for _ in range(SYMLINKS_FOLLOWED):
        folder = os.path.realpath(os.path.dirname(path))
        path = os.path.join(folder, os.path.basename(path))
        if OPEN_DESCRIPTORS.fullmatch(folder):
            return path, True
        if not os.path.islink(path):
            return path, False
        try:
            path = os.path.join(folder, os.readlink(path))
        except OSError as error:
            raise ConfigError(source, "", f"cannot write {shown}: {error.strerror or error}") from None
    raise ConfigError(source, "", f"cannot write {shown}: a symlink loop (too many levels of symbolic links)")


def resolve_output(path: str | os.PathLike, source: str) -> tuple[str, int | None]:
    """(the absolute path `path` names with every symlink followed, the os.open flags to write
    into it, or None where a renamed file replaces it). ConfigError naming `source` for a path
    that names a folder (an existing one, or a name ending in a separator), a block device or a
    socket, a symlink loop, or a closed descriptor."""
    shown = os.fspath(path)
    target, descriptor = _follow_links(shown, source)
    try:
        mode = os.stat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # not there yet; its folder is checked on its own
        if descriptor:
            raise ConfigError(source, "", f"cannot write {shown}: its descriptor is not open") from None
        if shown.endswith(("/", os.sep)):
            raise ConfigError(source, "", f"{shown} names a directory; give a file name") from None
        return target, None
    except OSError as error:
        raise ConfigError(source, "", f"cannot write {shown}: {error.strerror or error}") from None
    if stat.S_ISREG(mode):
        return target, INTO_DESCRIPTOR_FILE if descriptor else None
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return target, INTO_STREAM
    if stat.S_ISDIR(mode):
        raise ConfigError(source, "", f"{shown} is a directory; give a file name")
    kind = "a block device" if stat.S_ISBLK(mode) else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
    raise ConfigError(source, "", f"{shown} is {kind}; give a file, a character device or a FIFO")


def check_output_path(path: str | os.PathLike, flag: str) -> Path:
    """The output file `path` as a Path; ConfigError naming `flag` when `atomic_write` would
    refuse it (a directory, a block device, a socket, a symlink loop) or its folder cannot be
    written (a missing folder is fine: `atomic_write` creates it)."""
    target, into = resolve_output(path, flag)
    if into is None:
        _check_folder(Path(target).parent, flag, str(path))
    return Path(path)


def figure_format(path: str | os.PathLike, source: str) -> str:
    """The matplotlib format of the figure file `path`, from its suffix; ConfigError naming
    `source` and the known suffixes for any other."""
    suffix = Path(path).suffix
    if suffix.lower() not in FIGURE_FORMATS:
        named = f"suffix {suffix!r}" if suffix else "no suffix"
        known = ", ".join(FIGURE_FORMATS)
        raise ConfigError(source, "", f"{os.fspath(path)} has {named}; a figure is written as {known}")
    return FIGURE_FORMATS[suffix.lower()]


def check_figure_path(path: str | os.PathLike, flag: str) -> Path:
    """`check_output_path` for a figure, whose suffix must also name a known format."""
    checked = check_output_path(path, flag)
    figure_format(path, flag)
    return checked


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
    """Call write(temporary path), then put that file's content where `path` names (see the
    module docstring): onto a regular or missing file by a rename in its folder (created if
    missing), into a character device or FIFO by writing. A renamed file gets `file_mode()`
    (0o666 less the umask), a folder it creates 0o777 less the umask. On any failure the
    temporary file is removed and a regular `path` is left as it was; an OSError becomes a
    ConfigError naming `path`."""
    target, into = resolve_output(path, str(path))
    if into is not None:
        _write_into(target, into, write, suffix, str(path))
    else:
        _replace(target, write, suffix, str(path))


def _replace(target: str, write: Callable[[str], None], suffix: str, source: str) -> None:
    """write(temporary file in `target`'s folder), then rename it onto the regular or missing `target`."""
    folder = os.path.dirname(target)
    problem = _folder_problem(Path(folder))
    if problem:
        raise ConfigError(source, "", f"cannot write: {problem}")
    try:
        os.makedirs(folder, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=suffix, dir=folder)
    except OSError as error:
        raise ConfigError(source, "", f"cannot write: {error.strerror or error}") from None
    os.close(handle)
    try:
        write(tmp)
        os.chmod(tmp, file_mode())  # mkstemp creates 0600; an output is a file as `open` makes one
        if os.path.lexists(target) and not stat.S_ISREG(os.lstat(target).st_mode):
            raise ConfigError(source, "", "cannot write: it was replaced by something other than a file meanwhile")
        os.replace(tmp, target)
    except OSError as error:
        raise ConfigError(source, "", f"cannot write: {error.strerror or error}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _write_into(target: str, flags: int, write: Callable[[str], None], suffix: str, source: str) -> None:
    """write(temporary file in the temporary folder), then copy its bytes into `target`: one of
    this process's descriptors through a duplicate (sharing its offset), anything else opened
    with `flags` (a character device or FIFO without waiting for a reader, a regular file after
    its content)."""
    try:
        handle, tmp = tempfile.mkstemp(prefix=".hps-output.", suffix=suffix)
    except OSError as error:
        raise ConfigError(source, "", f"cannot write: {error.strerror or error}") from None
    os.close(handle)
    try:
        write(tmp)
        with os.fdopen(_open_into(target, flags, source), "wb") as sink, open(tmp, "rb") as content:
            shutil.copyfileobj(content, sink)
    except OSError as error:
        raise ConfigError(source, "", f"cannot write: {error.strerror or error}") from None
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _open_into(target: str, flags: int, source: str) -> int:
    """A blocking descriptor writing into `target`. This process's own descriptor N
    (/proc/PID/fd/N) is duplicated, after flushing what Python buffered for it, so the content
    lands after what the command already printed there."""
    own = re.fullmatch(rf"/proc/{os.getpid()}/fd/(\d+)", target)
    if own:
        number = int(own.group(1))
        for stream in (sys.stdout, sys.stderr):
            if stream is not None and _descriptor(stream) == number:
                stream.flush()
        return os.dup(number)
    try:
        into = os.open(target, flags)
    except OSError as error:
        if error.errno == errno.ENXIO:
            raise ConfigError(source, "", "cannot write: a FIFO that no process reads") from None
        raise
    os.set_blocking(into, True)
    return into


def _descriptor(stream) -> int | None:
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):  # a stream without one (a test's capture)
        return None


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` (UTF-8) to `path` through `atomic_write`, flushed to disk before the rename."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())

    atomic_write(path, write)
