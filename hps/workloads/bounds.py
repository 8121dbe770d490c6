"""The accepted range of every zoo hyperparameter (`--set NAME=VALUE`), checked before a layer
table is built, so that no override can make hps build millions of rows or numbers that overflow.

Three kinds of bound, each far past any published model and each small enough that the products
a layer builder takes of them stay finite floats:

- counts of repeated rows (``layers``, ``encoder_layers``, ``decoder_layers``, each entry of
  ``blocks``): at most MAX_WORKLOAD_LAYERS (4,096), the layers a workload file may hold; the whole
  table is held to it too (`hps.workloads.entry.Architecture.check_size`);
- widths and per-sample counts (``hidden``, ``ffn``, ``heads``, ``dim``, ``seq_len``, ``slots``,
  ``classes``, ids per slot, each entry of a width list such as ``hidden=512,256``): at most
  MAX_WIDTH = 2**20 = 1,048,576, ten times the widest published layer in the zoo (transformer-1t's
  FFN of 102,400); a width list has at most MAX_WORKLOAD_LAYERS entries;
- embedding-table rows and vocabularies (``rows``, ``rows_per_table``, ``wide_rows``,
  ``query_rows``, ``item_rows``, ``vocab``): at most MAX_TABLE_ROWS = 1e12 rows, a hundred times
  the zoo's largest table (wide-deep's 1e10 cross features).
"""

from __future__ import annotations

from dataclasses import dataclass

from hps.config.limits import MAX_WORKLOAD_LAYERS
from hps.errors import ConfigError

MAX_WIDTH = 2**20
"""The widest layer, and the largest per-sample count (tokens, slots, ids, classes), a zoo
hyperparameter may ask for."""

MAX_TABLE_ROWS = 1e12
"""The most rows an embedding table or vocabulary of the zoo may have."""


@dataclass(frozen=True)
class Bound:
    """Values 1..`most` (floats: above 0 and at most `most`); `why` says where the bound comes from."""

    most: float
    why: str


COUNT = Bound(MAX_WORKLOAD_LAYERS, "the layers a workload may hold, MAX_WORKLOAD_LAYERS")
WIDTH = Bound(MAX_WIDTH, "ten times the widest published layer")
TABLE_ROWS = Bound(MAX_TABLE_ROWS, "a hundred times the zoo's largest table")

BOUNDS: dict[str, Bound] = {
    **dict.fromkeys(("layers", "encoder_layers", "decoder_layers", "blocks"), COUNT),
    **dict.fromkeys(("rows", "rows_per_table", "wide_rows", "query_rows", "item_rows", "vocab"), TABLE_ROWS),
}
"""Flat hyperparameter name -> its bound; every other number (a width or per-sample count) has WIDTH."""


def bound_of(name: str) -> Bound:
    """The bound of hyperparameter `name` (a flat name, as `--set` takes it)."""
    return BOUNDS.get(name, WIDTH)


def check_bound(field: str, name: str, value: object, source: str) -> None:
    """ConfigError (source, field) when `value` (a checked number, or a tuple of positive
    integers) of hyperparameter `name` is past its bound, or a tuple has more than
    MAX_WORKLOAD_LAYERS entries. Booleans have no bound."""
    if isinstance(value, bool):
        return
    bound = bound_of(name)
    if isinstance(value, tuple):
        if len(value) > MAX_WORKLOAD_LAYERS:
            raise ConfigError(
                source,
                field,
                f"has {len(value):,} entries, more than the {MAX_WORKLOAD_LAYERS:,} layers a workload may hold",
            )
        for entry in value:
            if entry > bound.most:
                raise ConfigError(
                    source, field, f"each entry must be at most {_shown(bound.most)} ({bound.why}), got {_got(entry)}"
                )
        return
    if value > bound.most:
        raise ConfigError(source, field, f"must be at most {_shown(bound.most)} ({bound.why}), got {_got(value)}")


def _shown(number: float) -> str:
    """4096 -> '4,096'; 1e12 -> '1e+12'."""
    return f"{int(number):,}" if number < 1e9 else f"{number:g}"


def _got(value: object) -> str:
    """A value as an error shows it: a number of hundreds of digits shortened to its first ones."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}... ({len(text)} digits)"
