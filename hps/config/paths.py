"""Where shipped data lives, and resolving `--catalog NAME|FILE` / `--network NAME|FILE`."""

from __future__ import annotations

from pathlib import Path

from hps.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
TOPOLOGIES = REPO_ROOT / "topologies"


def resolve_topology(spec: str, kind: str, flag: str) -> Path:
    """The file `spec` names, or topologies/<kind>/<spec>.toml for a shipped name."""
    path = Path(spec)
    if path.is_file():
        return path
    shipped = TOPOLOGIES / kind / f"{spec}.toml"
    if shipped.is_file():
        return shipped
    known = sorted(p.stem for p in (TOPOLOGIES / kind).glob("*.toml"))
    raise ConfigError(flag, "", f"no such file or shipped {kind[:-1]} {spec!r}; shipped: {', '.join(known)}")
