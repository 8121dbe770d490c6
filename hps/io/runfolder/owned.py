"""The files hps owns in a run folder (its lock, metrics, manifest, checkpoints) are never
reached through a symbolic link: each is opened with O_NOFOLLOW, and `refuse_links` names any
that is a link before a run starts, so a link planted in a shared folder never makes hps write,
truncate or replace the file it points to."""

from __future__ import annotations

import os
from pathlib import Path

from hps.errors import ConfigError

LINK_PROBLEM = (
    "is a symbolic link; hps does not follow links to the files it owns: remove it (its target is left as it is)"
)


def refuse_links(folder: Path, names: tuple[str, ...]) -> None:
    """ConfigError naming the first of `folder`/`names` that is a symbolic link, and of the
    entries of folder/checkpoints (the checkpoint steps) when that is one of `names`."""
    for name in names:
        path = folder / name
        if path.is_symlink():
            raise ConfigError(str(path), "", LINK_PROBLEM)
        if name == "checkpoints" and path.is_dir():
            for entry in sorted(path.iterdir()):
                if entry.is_symlink():
                    raise ConfigError(str(entry), "", LINK_PROBLEM)


def _open(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    except OSError:
        if os.path.islink(path):
            raise ConfigError(str(path), "", LINK_PROBLEM) from None
        raise


def read_text(path: Path) -> str | None:
    """The text of owned file `path`, None when it does not exist; ConfigError when it is a link."""
    try:
        fd = _open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, encoding="utf-8", errors="replace") as stream:
        return stream.read()


def append_line(path: Path, line: str) -> None:
    """Append `line` (with its newline) to owned file `path`, flushed to disk (fsync) before
    this returns; ConfigError when the path is a link."""
    with os.fdopen(_open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "a", encoding="utf-8") as stream:
        stream.write(line)
        stream.flush()
        os.fsync(stream.fileno())
