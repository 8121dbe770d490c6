"""Small field checkers shared by the TOML loaders.

Each checker reads one field of an already-parsed TOML table and either returns the value in the
Python type the config dataclasses want (``int``, ``float``, ``str``) or raises
``ConfigError(source, field, problem)``. ``field`` is a path such as ``resource[2].memory_GiB``:
``prefix`` is the path of the table (``""`` at the top level) and ``key`` the field inside it.
Checkers never convert units; the loaders do that with the constants below.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from hps.config.limits import MAX_CHUNKS
from hps.config.ranges import check_in_range
from hps.config.types import COLLECTIVE_POLICIES, PRECISIONS, STATE_SHARDINGS, ZERO_LEVELS, Job, JobDefaults
from hps.errors import ConfigError

GIB = 2**30  # bytes per GiB (ASTRA-sim's convention)
MIB = 2**20  # bytes per MiB
TERA = 1e12  # FLOP/s per TFLOP/s
NANO = 1e-9  # seconds per ns


def field_path(prefix: str, key: str | int) -> str:
    """The path of `key` inside the table at `prefix`: ``resource[2]`` + ``memory_GiB``."""
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else key


TOML_TYPES = ((bool, "boolean"), (int, "integer"), (float, "float"), (str, "string"), (list, "array"), (dict, "table"))
"""(Python type, TOML name) of parsed values; bool before int, as a bool is an int."""


def toml_type(value: Any) -> str:
    """The TOML name of a parsed value's type (``string``, ``integer``, ``boolean`` ...)."""
    for python_type, name in TOML_TYPES:
        if isinstance(value, python_type):
            return name
    return type(value).__name__  # datetime, date, time


def describe(value: Any) -> str:
    """How an offending value is shown in an error: ``'fast' (string)``."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({toml_type(value)})"


def check_keys(
    table: dict[str, Any],
    allowed: Sequence[str],
    required: Iterable[str],
    source: str,
    prefix: str,
) -> None:
    """Reject keys outside `allowed` (naming the allowed ones) and missing `required` keys."""
    for key in table:
        if key not in allowed:
            hint = difflib.get_close_matches(key, allowed, n=1)
            guess = f"did you mean {hint[0]!r}? " if hint else ""
            raise ConfigError(
                source,
                field_path(prefix, key),
                f"unknown key; {guess}allowed keys: {', '.join(allowed)}",
            )
    for key in required:
        if key not in table:
            raise ConfigError(source, field_path(prefix, key), "required field is missing")


def require_table(value: Any, source: str, path: str) -> dict[str, Any]:
    """`value` itself, which must be a TOML table."""
    if not isinstance(value, dict):
        raise ConfigError(source, path, f"must be a table, got {describe(value)}")
    return value


def get_table_array(
    table: dict[str, Any],
    key: str,
    source: str,
    prefix: str,
    *,
    min_len: int,
    max_len: int,
) -> list[dict[str, Any]]:
    """The array of tables ``[[key]]`` with between `min_len` and `max_len` entries (absent = [])."""
    path = field_path(prefix, key)
    items = table.get(key, [])
    if not isinstance(items, list):
        raise ConfigError(source, path, f"must be an array of tables [[{key}]], got {describe(items)}")
    for i, item in enumerate(items):
        require_table(item, source, field_path(path, i))
    if len(items) < min_len:
        raise ConfigError(source, path, f"needs at least {min_len} [[{key}]] entry, got {len(items)}")
    if len(items) > max_len:
        raise ConfigError(source, path, f"at most {max_len} [[{key}]] entries allowed, got {len(items)}")
    return items


CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
"""The C0 control characters, DEL and the C1 control characters (U+0000-U+001F, U+007F-U+009F):
the ones a terminal acts on (escape sequences, carriage returns, bells) instead of showing; and
the bidirectional controls (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), which
reorder what follows them on screen, so "gpu\u202e1-upc" shows as another name; and the line and
paragraph separators (U+2028, U+2029), which break a line where none was printed."""


def printable(text: str) -> str:
    """`text` with every control character (CONTROL_CHARACTERS) written as its escape: "\\x1b[31m"
    for ESC [31m, "\\u202e" for RIGHT-TO-LEFT OVERRIDE, so a name shown in a table, a report or
    JSON cannot recolour the terminal, move the cursor, reorder text or forge lines. Other
    characters, backslashes included, stay as they are, so printable(printable(t)) ==
    printable(t): a written-out name reads back unchanged."""
    return CONTROL_CHARACTERS.sub(_escape, text)


def _escape(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def get_string(table: dict[str, Any], key: str, source: str, prefix: str) -> str:
    """A non-empty string field (a name), control characters escaped (`printable`)."""
    value = table[key]
    path = field_path(prefix, key)
    if not isinstance(value, str):
        raise ConfigError(source, path, f"must be a string, got {describe(value)}")
    if not value.strip():
        raise ConfigError(source, path, f"must not be empty, got {value!r}")
    return printable(value)


def get_name(table: dict[str, Any], key: str, source: str, prefix: str) -> str:
    """A name usable on the command line: non-empty, no commas, no surrounding whitespace, and
    control characters escaped (`printable`: the name every report, table and JSON shows)."""
    value = get_string(table, key, source, prefix)
    if "," in value or value != value.strip():
        raise ConfigError(
            source,
            field_path(prefix, key),
            f"must not contain commas or surrounding spaces (names are listed in --schedule), got {value!r}",
        )
    return value


def get_choice(table: dict[str, Any], key: str, choices: Sequence[str], source: str, prefix: str) -> str:
    """A string field that must be one of `choices`."""
    value = table[key]
    path = field_path(prefix, key)
    if not isinstance(value, str):
        raise ConfigError(source, path, f"must be one of {', '.join(choices)}; got {describe(value)}")
    if value not in choices:
        raise ConfigError(source, path, f"unknown value {value!r}; must be one of {', '.join(choices)}")
    return value


def get_int(table: dict[str, Any], key: str, source: str, prefix: str, *, minimum: int) -> int:
    """An integer field ≥ `minimum` (booleans and floats are rejected)."""
    value = table[key]
    path = field_path(prefix, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(source, path, f"must be an integer, got {describe(value)}")
    if value < minimum:
        raise ConfigError(source, path, f"must be >= {minimum}, got {value}")
    return value


def as_number(value: Any, source: str, path: str) -> float:
    """A finite TOML number as float (integers accepted, booleans and strings rejected)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(source, path, f"must be a number, got {describe(value)}")
    if not math.isfinite(value):
        raise ConfigError(source, path, f"must be a finite number, got {value!r}")
    return float(value)


def as_real(value: Any) -> float | None:
    """`value` as a float when it is a real number (int, float, a numpy integer or float scalar;
    not a bool), an int too large for a float as ±inf; else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def is_integer(value: Any) -> bool:
    """Whether `value` is an integer (int or a numpy integer scalar; not a bool)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def get_positive(table: dict[str, Any], key: str, source: str, prefix: str) -> float:
    """A number field > 0, as float."""
    path = field_path(prefix, key)
    value = as_number(table[key], source, path)
    if value <= 0:
        raise ConfigError(source, path, f"must be > 0, got {table[key]!r}")
    return value


def get_non_negative(table: dict[str, Any], key: str, source: str, prefix: str) -> float:
    """A number field ≥ 0, as float."""
    path = field_path(prefix, key)
    value = as_number(table[key], source, path)
    if value < 0:
        raise ConfigError(source, path, f"must be >= 0, got {table[key]!r}")
    return value


def get_fraction(table: dict[str, Any], key: str, source: str, prefix: str) -> float:
    """A number field in (0, 1], as float."""
    path = field_path(prefix, key)
    value = as_number(table[key], source, path)
    if not 0 < value <= 1:
        raise ConfigError(source, path, f"must be in (0, 1], got {table[key]!r}")
    return value


def check_unique(names: Sequence[str], source: str, array_path: str, what: str) -> None:
    """Reject a repeated name in the array of tables at `array_path`, names compared after
    Unicode NFKC normalisation (so "ﬁ" and "fi", or a composed and a decomposed "é", which look
    alike, are one name); names the second one."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        key = unicodedata.normalize("NFKC", name) if isinstance(name, str) else name
        if key in seen:
            first = names[seen[key]]
            alike = "" if first == name else f" (equal to {first!r} after Unicode normalisation)"
            raise ConfigError(
                source,
                field_path(field_path(array_path, i), "name"),
                f"duplicate {what} name {name!r}{alike} (also {field_path(array_path, seen[key])})",
            )
        seen[key] = i


def check_range(
    owner: object, what: str, low: float, high: float, *, least: float = -math.inf, above: float | None = None,
    most: float = math.inf,
) -> None:  # fmt: skip
    """ValueError naming `what` (and showing `owner`) unless least <= low <= high <= most, and
    above < low when `above` is given: the check of a (min, max) pair of generator bounds."""
    ok = least <= low <= high <= most and (above is None or above < low)
    if not ok:
        lower = f"{above} < min" if above is not None else f"{least} <= min"
        upper = f" <= {most}" if most != math.inf else ""
        raise ValueError(f"{what} must satisfy {lower} <= max{upper}: {owner}")


def check_micro_batches(value: Any, source: str, path: str) -> float:
    """Micro-batches per iteration: a positive integer, or inf (no pipeline bubble), as float."""
    number = as_real(value)
    if number is None or math.isnan(number):
        raise ConfigError(source, path, f"must be a positive integer or inf, got {describe(value)}")
    if number <= 0 or not (math.isinf(number) or number.is_integer()) or (math.isinf(number) and is_integer(value)):
        raise ConfigError(source, path, f"must be a positive integer or inf, got {describe(value)}")
    return number


def check_micro_batches_split(micro_batches: float, batch: float, source: str, path: str) -> None:
    """ConfigError unless `micro_batches` micro-batches (finite) split the batch of `batch`
    samples into whole samples: at most the batch, and dividing it (inf, no pipeline bubble, is
    always accepted). A micro-batch of less than a sample, or of a fraction of one, is a job no
    cluster can run, whose bubble would still shrink in the model."""
    if math.isinf(micro_batches):
        return
    if micro_batches > batch:
        raise ConfigError(
            source, path, f"{micro_batches:g} micro-batches exceed the batch of {batch:g} samples (at most {batch:g})"
        )
    if math.fmod(batch, micro_batches) != 0:
        raise ConfigError(
            source,
            path,
            f"{micro_batches:g} micro-batches do not split the batch of {batch:g} samples into whole samples "
            f"({batch:g}/{micro_batches:g} = {batch / micro_batches:g} samples each)",
        )


def check_state_sharding(value: Any, source: str, path: str) -> str:
    """One of STATE_SHARDINGS ("none": replicated states; "auto": sharding allowed)."""
    if value not in STATE_SHARDINGS:
        raise ConfigError(source, path, f"must be one of {', '.join(STATE_SHARDINGS)}, got {value!r}")
    return value


def validate_job(job: Job, source: str = "job") -> None:
    """Raise ConfigError for a non-positive batch, floor or sample count, a bad policy or chunk
    count, micro_batches that are not a positive integer or inf, an unknown state_sharding, a
    number outside its range (hps.config.ranges), or a parallel-plan field out of its domain
    (`check_parallel_job`: micro_batch, precision, zero, recompute; their defaults all pass)."""
    for name in ("batch", "throughput", "samples") + (() if job.budget_per_hour is None else ("budget_per_hour",)):
        value = as_real(getattr(job, name))
        if value is None or not (math.isfinite(value) and value > 0):
            raise ConfigError(source, name, f"must be a positive number, got {describe(getattr(job, name))}")
        check_in_range(value, name, source, name)
    if not isinstance(job.collective, str) or job.collective not in COLLECTIVE_POLICIES:
        raise ConfigError(source, "collective", f"must be baseline or themis, got {describe(job.collective)}")
    if not is_integer(job.chunks) or not 1 <= job.chunks <= MAX_CHUNKS:
        raise ConfigError(source, "chunks", f"must be an integer in 1..{MAX_CHUNKS}, got {describe(job.chunks)}")
    micro_batches = check_micro_batches(job.micro_batches, source, "micro_batches")
    check_in_range(micro_batches, "micro_batches", source, "micro_batches")
    check_micro_batches_split(micro_batches, float(job.batch), source, "micro_batches")
    check_state_sharding(job.state_sharding, source, "state_sharding")
    check_parallel_job(job, source)


def check_micro_batch(value: Any, batch: float, source: str, path: str) -> float:
    """The micro-batch (samples per pipeline micro-batch across a stage's replicas) as float: a
    positive integer, at most `batch` (samples per iteration) and a divisor of it."""
    given, value = value, as_real(value)
    if value is None or not math.isfinite(value) or value < 1 or not value.is_integer():
        raise ConfigError(source, path, f"must be a positive integer (samples), got {describe(given)}")
    check_in_range(value, "micro_batch", source, path)
    if value > batch:
        raise ConfigError(source, path, f"micro-batch {value:g} exceeds the batch {batch:g}: must be at most batch")
    if math.fmod(batch, value) != 0:
        raise ConfigError(
            source,
            path,
            f"micro-batch {value:g} does not divide the batch {batch:g} "
            f"({batch:g}/{value:g} = {batch / value:g} micro-batches is not a whole number)",
        )
    return float(value)


def check_precision(value: Any, source: str, path: str) -> str:
    """One of PRECISIONS (bf16-adam, bf16-adam-fp32-grads, fp32-adam, fp32-sgd)."""
    if not isinstance(value, str) or value not in PRECISIONS:
        raise ConfigError(source, path, f"unknown precision {value!r}; must be one of {', '.join(PRECISIONS)}")
    return value


def check_zero(value: Any, source: str, path: str) -> int:
    """A ZeRO level, one of ZERO_LEVELS (0 to 3; an integer, not a bool)."""
    if not is_integer(value) or value not in ZERO_LEVELS:
        raise ConfigError(source, path, f"ZeRO level must be one of {', '.join(map(str, ZERO_LEVELS))}, got {value!r}")
    return int(value)


def check_parallel_job(job: Job, source: str) -> None:
    """Raise ConfigError naming `source` and the field for a parallel-plan job field out of its
    domain: a micro_batch (samples) that is not a positive integer, exceeds batch or does not
    divide it (None is accepted: the solver searches the divisors), an unknown precision, a ZeRO
    level outside 0..3, or a schedule choice out of its domain (`check_plan_space`)."""
    from hps.config.plan_space import check_plan_space

    if job.micro_batch is not None:
        check_micro_batch(job.micro_batch, job.batch, source, "micro_batch")
    check_precision(job.precision, source, "precision")
    check_zero(job.zero, source, "zero")
    check_plan_space(job, source)


def check_parallel_model_job(job: Job, source: str) -> None:
    """Raise ConfigError naming `source` and the field where the parallel-plan model cannot take
    `job`: it runs whole samples, so batch (samples per iteration) and micro_batch (where given)
    must be whole numbers. The schedule model (fractional replicas) takes any positive batch."""
    for name in ("batch", "micro_batch"):
        value = as_real(getattr(job, name))
        if value is not None and not value.is_integer():
            raise ConfigError(source, name, f"the parallel-plan model runs whole samples: not an integer: {value:g}")


PARALLEL_JOB_FIELDS = ("micro_batch", "precision", "zero", "recompute", "virtual_stages", "fp8", "memory_headroom")
"""The job fields of the parallel-plan model that a workload's defaults may give."""


def with_parallel_fields(job: Job, defaults: JobDefaults | None, given: dict[str, Any], source: str) -> Job:
    """`job` with each parallel-plan field from `given` where not None, else from `defaults`
    where it names one (micro_batch as a float; "auto" leaves virtual_stages, fp8 or recompute to
    the planner), validated (ConfigError naming `source`)."""
    values = {}
    for name in PARALLEL_JOB_FIELDS:
        value = given.get(name)
        if value is None and defaults is not None:
            value = getattr(defaults, name)
        if value == "auto" and name in ("virtual_stages", "fp8", "recompute"):
            values[name] = None  # left to the planner
        elif value is not None:
            number = as_real(value) if name == "micro_batch" else None
            values[name] = value if number is None else number  # a non-number: validate_job names it
    job = dataclasses.replace(job, **values)
    validate_job(job, source=source)
    return job
