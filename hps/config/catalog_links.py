"""Where a catalogue's resource types are, and the links between those places.

A ``[[resource]]`` may name its ``site`` (a provider and region, or a cluster; omitted: "", one
unnamed site) and its largest tensor-parallel group ``tp_max`` (a power of two). A catalogue's
optional top-level ``[[link]]`` tables join two sites:

```toml
[[link]]
sites = ["aws-us-east-1", "gcp-us-east5"]
bandwidth_GiBps = 11.642      # each direction
latency_ns = 8.0e6            # per transfer
dollars_per_GiB = 0.12        # egress, either direction
```

The typed `Link` carries bytes/s, seconds and dollars per byte (GiB = 2**30 bytes). Every problem
raises ``ConfigError(file, field, problem)`` naming a field such as ``link[1].dollars_per_GiB``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hps.config.limits import MAX_CATALOG_TYPES
from hps.config.ranges import check_in_range, is_power_of_two
from hps.config.types import Link, ResourceType
from hps.config.validation import (
    GIB,
    NANO,
    check_keys,
    describe,
    field_path,
    get_int,
    get_non_negative,
    get_positive,
    get_string,
    get_table_array,
    printable,
)
from hps.errors import ConfigError

RESOURCE_SITE_KEYS = ("site", "tp_max")
"""Optional [[resource]] keys of the parallel-plan model (omitted: site "", tp_max 0 = the size of
the type's first network dimension)."""
LINK_KEYS = ("sites", "bandwidth_GiBps", "latency_ns", "dollars_per_GiB")
MAX_LINKS = MAX_CATALOG_TYPES * (MAX_CATALOG_TYPES - 1) // 2
"""A catalogue's [[link]] tables: at most one per pair of sites, and a site has at least one type."""


def parse_site_fields(table: dict[str, Any], source: str, prefix: str, network_size: int) -> dict[str, Any]:
    """The optional ``site`` (a non-empty string, control characters escaped) and ``tp_max`` (a
    power of two, devices, at most the type's `network_size`) of a [[resource]], as ResourceType
    keyword arguments (only those the table gives)."""
    fields: dict[str, Any] = {}
    if "site" in table:
        fields["site"] = get_string(table, "site", source, prefix)
    if "tp_max" in table:
        path = field_path(prefix, "tp_max")
        tp_max = get_int(table, "tp_max", source, prefix, minimum=1)
        if not is_power_of_two(tp_max):
            raise ConfigError(source, path, f"must be a power of two (1, 2, 4, 8, ...), got {tp_max}")
        check_in_range(tp_max, "tp_max", source, path)
        if tp_max > network_size:
            raise ConfigError(
                source, path, f"must be at most the type's network size {network_size} devices, got {tp_max}"
            )
        fields["tp_max"] = tp_max
    return fields


def _link_sites(table: dict[str, Any], known: Sequence[str], source: str, prefix: str) -> tuple[str, str]:
    """The two distinct sites of a [[link]], each the site of some resource type in the file."""
    path = field_path(prefix, "sites")
    value = table["sites"]
    if not isinstance(value, list) or len(value) != 2:
        raise ConfigError(source, path, f"must be an array of exactly two site names, got {describe(value)}")
    sites = []
    for i in range(2):
        if not isinstance(value[i], str) or not value[i].strip():
            raise ConfigError(source, field_path(path, i), f"must be a non-empty site name, got {describe(value[i])}")
        site = printable(value[i])
        if site not in known:
            shown = ", ".join(repr(s) for s in known) if known else "none (no [[resource]] sets site)"
            raise ConfigError(
                source, field_path(path, i), f"unknown site {site!r}; the resource types' sites are {shown}"
            )
        sites.append(site)
    if sites[0] == sites[1]:
        raise ConfigError(source, path, f"must name two different sites, got {sites[0]!r} twice")
    return sites[0], sites[1]


def parse_link(table: dict[str, Any], known: Sequence[str], source: str, prefix: str) -> Link:
    """One ``[[link]]``: sites (two of `known`), bandwidth_GiBps (> 0, each direction) -> B/s,
    latency_ns (>= 0, per transfer) -> s, dollars_per_GiB (>= 0, egress either way) -> $/byte."""
    check_keys(table, LINK_KEYS, LINK_KEYS, source, prefix)
    sites = _link_sites(table, known, source, prefix)
    bandwidth = check_in_range(
        get_positive(table, "bandwidth_GiBps", source, prefix),
        "bandwidth_GiBps",
        source,
        field_path(prefix, "bandwidth_GiBps"),
    )
    latency = check_in_range(
        get_non_negative(table, "latency_ns", source, prefix), "latency_ns", source, field_path(prefix, "latency_ns")
    )
    price_path = field_path(prefix, "dollars_per_GiB")
    price = get_non_negative_price(table, source, prefix)
    check_in_range(price, "dollars_per_GiB", source, price_path)
    return Link(sites=sites, bandwidth=bandwidth * GIB, latency=latency * NANO, dollars_per_byte=price / GIB)


def get_non_negative_price(table: dict[str, Any], source: str, prefix: str) -> float:
    """``dollars_per_GiB`` as float: a finite number >= 0 (a negative egress price is refused)."""
    try:
        return get_non_negative(table, "dollars_per_GiB", source, prefix)
    except ConfigError as error:
        if error.problem.startswith("must be >= 0"):
            raise ConfigError(
                source,
                error.field,
                f"must be >= 0 dollars per GiB: an egress price cannot be negative, got {table['dollars_per_GiB']!r}",
            ) from None
        raise


def parse_links(data: dict[str, Any], resources: Sequence[ResourceType], source: str) -> tuple[Link, ...]:
    """The catalogue's ``[[link]]`` tables (absent: none), at most one per pair of sites."""
    known = sorted({r.site for r in resources if r.site})
    items = get_table_array(data, "link", source, "", min_len=0, max_len=MAX_LINKS)
    links: list[Link] = []
    seen: dict[frozenset[str], int] = {}
    for i, table in enumerate(items):
        link = parse_link(table, known, source, f"link[{i}]")
        pair = frozenset(link.sites)
        if pair in seen:
            a, b = link.sites
            raise ConfigError(
                source,
                f"link[{i}].sites",
                f"a second link between {a!r} and {b!r} (also link[{seen[pair]}]); give one link per pair of sites",
            )
        seen[pair] = i
        links.append(link)
    return tuple(links)
