"""Plain-text tables for the CLI."""

from __future__ import annotations

import math
import numbers

from hps.errors import NonFiniteResult


def non_finite(value, path: str = ""):
    """(path, value) of the first inf or NaN inside `value` (nested dicts, lists and tuples of
    numbers, e.g. ``stages[0].time``), or None when every number is finite."""
    if isinstance(value, dict):
        items = ((f"{path}.{key}" if path else str(key), item) for key, item in value.items())
    elif isinstance(value, (list, tuple)):
        items = ((f"{path}[{i}]", item) for i, item in enumerate(value))
    else:
        is_number = isinstance(value, numbers.Real) and not isinstance(value, (bool, int))
        return (path, float(value)) if is_number and not math.isfinite(value) else None
    return next(filter(None, (non_finite(item, where) for where, item in items)), None)


def require_finite(payload, where: str):
    """`payload` itself, or NonFiniteResult naming `where` (the command's output) and the path
    of its first non-finite number: no output shows inf or NaN as a result."""
    found = non_finite(payload)
    if found is not None:
        raise NonFiniteResult(where, *found)
    return payload


def format_number(value) -> str:
    """Compact human form: 3 significant digits for floats, thousands separators for big ones."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return str(value)
        if abs(value) >= 1e4:
            return f"{value:,.0f}"
        return f"{value:.4g}"
    return str(value)


def finite(value: float) -> float | None:
    """`value`, or None (JSON null) where it is inf or NaN: a figure not reached, no bound."""
    return value if math.isfinite(value) else None


def dollars(value: float, decimals: int = 0) -> str:
    """A dollar figure in text: from $1, with thousands separators and `decimals` places
    ("$12,823", "$1.00"); below $1, 3 significant digits ("$0.000619", "$0.25"), so a small
    cost never reads "$0" (0 itself does)."""
    if value == 0 or abs(value) >= 1:
        return f"${value:,.{decimals}f}"
    return f"${value:.3g}"


def format_table(headers: list[str], rows: list[list]) -> str:
    """Left-aligned text columns with a rule under the header; NonFiniteResult naming the row and
    column of an inf or NaN cell."""
    for i, row in enumerate(rows):
        require_finite(dict(zip(headers, row)), f"table row {i + 1}")
    cells = [[format_number(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])
