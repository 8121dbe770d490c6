"""Where shipped data lives, and resolving `--catalog NAME|FILE` / `--network NAME|FILE`."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from hps.config.inputs import require_regular_file
from hps.errors import ConfigError


def _shipped_topologies() -> Path:
    """The folder of shipped data: the package `hps.topologies` of an install (wheel or editable).

    A source tree imported straight from its folder (PYTHONPATH, pytest's rootdir) has no such
    package, or one an install of another checkout provides; it reads its own topologies/.
    """
    package = Path(__file__).resolve().parents[1]
    try:
        found = Path(str(resources.files("hps.topologies")))
    except ModuleNotFoundError:
        found = None
    if found is not None and found.resolve().parent in (package, package.parent):
        return found
    return package.parent / "topologies"


TOPOLOGIES = _shipped_topologies()


def resolve_topology(spec: str, kind: str, flag: str) -> Path:
    """The file `spec` names, or topologies/<kind>/<spec>.toml for a shipped name. ConfigError
    naming `flag` when neither exists, or when `spec` is something other than a regular file (a
    directory, FIFO, device or symlink loop, named as such)."""
    path = Path(spec)
    if path.is_file():
        return path
    shipped = TOPOLOGIES / kind / f"{spec}.toml"
    if shipped.is_file():
        return shipped
    if os.path.lexists(path):
        require_regular_file(path, flag, f"{kind[:-1]} TOML file")
    known = sorted(p.stem for p in (TOPOLOGIES / kind).glob("*.toml"))
    raise ConfigError(flag, "", f"no such file or shipped {kind[:-1]} {spec!r}; shipped: {', '.join(known)}")
