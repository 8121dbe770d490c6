"""ASTRA-sim 1.0's workload text format (inputs/workload/*.txt of astra-sim/astra-sim, branch
ASTRA-sim-1.0; parsed there by `Workload::initialize_workload`), read into typed layers.

    line 1   PARALLELISM [extra]      DATA | MODEL | HYBRID_DATA_MODEL | HYBRID_MODEL_DATA | MICRO
                                      | HYBRID_TRANSFORMER model_parallel_NPU_group: G
                                      | HYBRID_DLRM LAST_BOTTOM_LAYER | HYBRID_CUSTOMIZED
    line 2   LAYERS                   the number of layer lines that follow
    layer    NAME DEPENDENCY  FWD_CYCLES FWD_KIND FWD_BYTES  IG_CYCLES IG_KIND IG_BYTES
             WG_CYCLES WG_KIND WG_BYTES  UPDATE_CYCLES [PARALLELISM, HYBRID_CUSTOMIZED only]

Compute times are cycles (1 ns each in ASTRA-sim 1.0), sizes bytes; a kind is NONE, ALLREDUCE,
ALLGATHER, REDUCESCATTER, ALLTOALL or ALLREDUCEALLTOALL. ASTRA-sim reads whitespace-separated
tokens and ignores what follows; this reader takes one layer per line and refuses, with the file,
the line number and what is wrong, any line that does not fit: a wrong count of fields, a number
that is not a non-negative integer, an unknown kind, a parallelism ASTRA-sim 1.0 does not know or
this reader does not support (HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM_ENHANCED,
DISTRIBUTED_INFERENCE), or a layer count that does not match the lines."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hps.errors import ConfigError

COLLECTIVE_KINDS = ("NONE", "ALLREDUCE", "ALLGATHER", "REDUCESCATTER", "ALLTOALL", "ALLREDUCEALLTOALL")
PARALLELISMS = (
    "DATA",
    "MODEL",
    "HYBRID_DATA_MODEL",
    "HYBRID_MODEL_DATA",
    "HYBRID_TRANSFORMER",
    "HYBRID_DLRM",
    "HYBRID_CUSTOMIZED",
    "MICRO",
)
UNSUPPORTED = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM_ENHANCED", "DISTRIBUTED_INFERENCE")
LAYER_FIELDS = 12
PASSES = ("forward", "input-gradient", "weight-gradient")


@dataclass(frozen=True)
class AstraPass:
    """One pass of a layer: its compute (cycles) and the collective that follows it."""

    compute_cycles: int
    collective: str
    """One of COLLECTIVE_KINDS."""
    size_bytes: int


@dataclass(frozen=True)
class AstraLayer:
    name: str
    dependency: int
    forward: AstraPass
    input_grad: AstraPass
    weight_grad: AstraPass
    update_cycles: int
    """The delay after the weight-gradient collective (cycles)."""
    parallelism: str | None = None
    """The layer's own parallelism (HYBRID_CUSTOMIZED files only)."""


@dataclass(frozen=True)
class AstraWorkload:
    source: str
    parallelism: str
    """One of PARALLELISMS."""
    layers: tuple[AstraLayer, ...]
    model_parallel_group: int | None = None
    """HYBRID_TRANSFORMER: the NPUs of one model-parallel group."""
    dlrm_last_bottom_layer: int | None = None
    """HYBRID_DLRM: the index of the last bottom-MLP layer."""


def _refuse(path, line: int, problem: str):
    return ConfigError(f"{path}:{line}", "", problem)


def _count(token: str, path, line: int, what: str, *, signed: bool = False) -> int:
    """A non-negative (or, signed, any) integer token, else a refusal naming `what`."""
    text = token[1:] if signed and token.startswith("-") else token
    if not text.isdigit():
        kind = "an integer" if signed else "a non-negative integer"
        raise _refuse(path, line, f"{what}: must be {kind}, got {token!r}")
    return int(token)


def _header(tokens: list[str], path) -> tuple[str, int | None, int | None]:
    """(parallelism, model-parallel group, DLRM last bottom layer) of line 1."""
    if not tokens:
        raise _refuse(path, 1, "the first line must name the parallelism, found an empty line")
    kind, rest = tokens[0], tokens[1:]
    if kind in UNSUPPORTED:
        raise _refuse(path, 1, f"parallelism {kind} is not supported; supported: {', '.join(PARALLELISMS)}")
    if kind not in PARALLELISMS:
        raise _refuse(path, 1, f"unknown parallelism {kind!r}; expected one of {', '.join(PARALLELISMS)}")
    if kind == "HYBRID_TRANSFORMER":
        if len(rest) != 2 or rest[0] != "model_parallel_NPU_group:":
            raise _refuse(path, 1, f"HYBRID_TRANSFORMER must be followed by 'model_parallel_NPU_group: G', got {rest}")
        group = _count(rest[1], path, 1, "model_parallel_NPU_group")
        if group < 1:
            raise _refuse(path, 1, f"model_parallel_NPU_group: must be at least 1, got {group}")
        return kind, group, None
    if kind == "HYBRID_DLRM":
        if len(rest) != 1:
            raise _refuse(path, 1, f"HYBRID_DLRM must be followed by the last bottom layer's index, got {rest}")
        return kind, None, _count(rest[0], path, 1, "last bottom layer")
    if rest:
        raise _refuse(path, 1, f"{kind} takes nothing after it, got {rest}")
    return kind, None, None


def _pass(tokens: list[str], path, line: int, name: str) -> AstraPass:
    cycles = _count(tokens[0], path, line, f"{name} compute cycles")
    kind = tokens[1]
    if kind not in COLLECTIVE_KINDS:
        raise _refuse(
            path, line, f"{name} collective: unknown kind {kind!r}; expected one of {', '.join(COLLECTIVE_KINDS)}"
        )
    return AstraPass(cycles, kind, _count(tokens[2], path, line, f"{name} collective bytes"))


def _layer(tokens: list[str], path, line: int, customized: bool) -> AstraLayer:
    expected = LAYER_FIELDS + customized
    if len(tokens) != expected:
        raise _refuse(path, line, f"a layer line has {expected} fields, got {len(tokens)}")
    passes = [_pass(tokens[2 + 3 * i : 5 + 3 * i], path, line, name) for i, name in enumerate(PASSES)]
    parallelism = None
    if customized:
        parallelism = tokens[LAYER_FIELDS]
        if parallelism not in PARALLELISMS or parallelism in ("HYBRID_CUSTOMIZED", "MICRO"):
            raise _refuse(path, line, f"the layer's parallelism {parallelism!r} is not one a layer may take")
    return AstraLayer(
        name=tokens[0],
        dependency=_count(tokens[1], path, line, "dependency", signed=True),
        forward=passes[0],
        input_grad=passes[1],
        weight_grad=passes[2],
        update_cycles=_count(tokens[11], path, line, "update cycles"),
        parallelism=parallelism,
    )


def read_astra_workload(path) -> AstraWorkload:
    """The ASTRA-sim 1.0 workload file at `path`; ConfigError "PATH:LINE: what is wrong" when a
    line does not fit the format (see the module docstring)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(str(path), "", f"cannot read the workload file: {error}") from None
    lines = [(number, raw.split()) for number, raw in enumerate(text.splitlines(), start=1)]
    while lines and not lines[-1][1]:
        lines.pop()  # blank lines at the end
    if not lines:
        raise _refuse(path, 1, "the file is empty")
    parallelism, group, last_bottom = _header(lines[0][1], path)
    if len(lines) < 2 or len(lines[1][1]) != 1:
        found = lines[1][1] if len(lines) > 1 else "nothing"
        raise _refuse(path, 2, f"the second line must hold the number of layers alone, got {found}")
    count = _count(lines[1][1][0], path, 2, "number of layers")
    body = lines[2:]
    for number, tokens in body:
        if not tokens:
            raise _refuse(path, number, "an empty line among the layer lines")
    if len(body) != count:
        where = body[count][0] if len(body) > count else (body[-1][0] if body else 2)
        raise _refuse(path, where, f"the second line announces {count} layers, the file has {len(body)} layer lines")
    customized = parallelism == "HYBRID_CUSTOMIZED"
    layers = tuple(_layer(tokens, path, number, customized) for number, tokens in body)
    if last_bottom is not None and last_bottom >= count:
        raise _refuse(path, 1, f"last bottom layer {last_bottom} is past the {count} layers")
    return AstraWorkload(str(path), parallelism, layers, group, last_bottom)
