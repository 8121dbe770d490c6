"""Plain-text tables for the CLI."""

from __future__ import annotations

import math


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


def format_table(headers: list[str], rows: list[list]) -> str:
    """Left-aligned text columns with a rule under the header."""
    cells = [[format_number(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda row: "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip()  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(r) for r in cells)])
