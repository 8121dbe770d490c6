"""Writing TOML values: the few forms hps's file writers need, each read back unchanged by tomllib."""

from __future__ import annotations


def toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def toml_float(value: float) -> str:
    """`repr` of the float, which TOML reads back to the identical float."""
    return repr(float(value))  # inf and nan are valid TOML too (the loader rejects them)
