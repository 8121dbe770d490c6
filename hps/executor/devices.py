"""Device pools: which JAX devices run each resource type, and which devices each stage gets.

A pool is named by resource type. `--devices cpu=0-3,v100=4-7` names groups of `jax.devices()`
by index (tests use groups of the 8 fake CPU devices). Without a mapping, GPU types get
`jax.devices("gpu")` and CPU types `jax.devices("cpu")` when both exist; on a machine with one
kind of device every type shares all of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax

from hps.config.types import Catalog
from hps.errors import ConfigError

FLAG = "devices"


def parse_device_map(text: str, catalog: Catalog, n_devices: int) -> dict[str, list[int]]:
    """ "cpu=0-3,v100=4-7" -> {"cpu": [0, 1, 2, 3], "v100": [4, 5, 6, 7]} (indices into jax.devices()).

    Each entry is TYPE=FIRST-LAST or TYPE=INDEX; TYPE must be in the catalogue and every index
    below n_devices. Raises ConfigError naming the entry.
    """
    pools: dict[str, list[int]] = {}
    for entry in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, span = entry.partition("=")
        name = name.strip()
        if not sep or not span.strip():
            raise ConfigError(FLAG, entry, "expected TYPE=FIRST-LAST or TYPE=INDEX")
        if name not in catalog.names:
            raise ConfigError(FLAG, entry, f"unknown resource type {name!r}; catalogue has {', '.join(catalog.names)}")
        if name in pools:
            raise ConfigError(FLAG, entry, f"type {name!r} is mapped twice")
        pools[name] = _index_span(entry, span, n_devices)
    if not pools:
        raise ConfigError(FLAG, "", "empty mapping; expected e.g. cpu=0-3,v100=4-7")
    return pools


def _index_span(entry: str, span: str, n_devices: int) -> list[int]:
    first_text, _, last_text = span.partition("-")
    try:
        first = int(first_text)
        last = int(last_text) if last_text else first
    except ValueError:
        raise ConfigError(FLAG, entry, f"indices must be integers, got {span!r}") from None
    if not 0 <= first <= last < n_devices:
        raise ConfigError(
            FLAG, entry, f"needs 0 <= FIRST <= LAST < {n_devices} (this process sees {n_devices} devices)"
        )
    return list(range(first, last + 1))


def device_pools(catalog: Catalog, types: Sequence[str], mapping: str | None = None) -> dict[str, list]:
    """{type name: [jax.Device, ...]} for every type in `types` (the plan's stage types)."""
    devices = jax.devices()
    if mapping:
        indices = parse_device_map(mapping, catalog, len(devices))
        missing = sorted(set(types) - set(indices))
        if missing:
            raise ConfigError(FLAG, "", f"the plan uses {', '.join(missing)} but the mapping does not name it")
        return {name: [devices[i] for i in indices[name]] for name in types}
    by_kind = {kind: _platform_devices(kind) for kind in ("cpu", "gpu")}
    both = all(by_kind.values())
    pools = {}
    for name in types:
        kind = catalog.resources[catalog.index(name)].kind
        pools[name] = by_kind[kind] if both and kind in by_kind else devices
    return pools


def _platform_devices(platform: str) -> list:
    try:
        return jax.devices(platform)
    except RuntimeError:
        return []


def assign_stage_devices(stage_types: Sequence[str], replicas: Sequence[int], pools: dict[str, list]) -> list[list]:
    """Devices of each stage: stages of one type take consecutive devices of its pool, wrapping
    round (and so sharing devices) only when the pool is too small for all of them."""
    cursor = dict.fromkeys(pools, 0)
    assigned = []
    for name, k in zip(stage_types, replicas):
        pool = pools[name]
        if k > len(pool):
            raise ConfigError(FLAG, name, f"a stage needs {k} devices but the pool of {name!r} has {len(pool)}")
        start = cursor[name] if cursor[name] + k <= len(pool) else 0
        assigned.append(pool[start : start + k])
        cursor[name] = start + k
    return assigned
