"""Zoo workload name -> its Flax model, built from the same hyperparameters as its layer table.

`build_model("ctr-dnn-small", hidden=(32,))` and `build_workload("ctr-dnn-small", hidden=(32,))`
check the same overrides the same way (`hps.workloads.checked_hyperparameters`), so the model and
its table always agree layer for layer.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType

from flax import nnx

from hps.config.types import Workload
from hps.errors import ConfigError
from hps.models.base import LayeredModel
from hps.models.mlp import MLP
from hps.models.recsys import CTRDNN, DLRM, TwoTower
from hps.models.transformer import Transformer
from hps.workloads import ZOO, base_workload, checked_hyperparameters

MODELS: dict[str, Callable[..., LayeredModel]] = {
    "ctr-dnn": CTRDNN,
    "dlrm": DLRM,
    "matchnet": TwoTower,
    "mlp": MLP,
    "transformer": Transformer,
}
"""Base zoo entries with a Flax model; their presets ("ctr-dnn-small", ...) use the same one."""

MAX_MODEL_BYTES = 4 * 2**30
"""Largest parameter size `build_model` allocates by default (the zoo's production tables are
hundreds of GiB: use a -small variant or `--set`)."""


def model_workloads() -> list[str]:
    """Names of the zoo workloads that have a Flax model."""
    return [name for name in ZOO if base_workload(name) in MODELS]


def build_model(
    workload: str,
    *,
    rngs: nnx.Rngs | None = None,
    seed: int = 0,
    max_bytes: float = MAX_MODEL_BYTES,
    source: str = "workload",
    **overrides: object,
) -> LayeredModel:
    """The Flax model of zoo workload `workload` with its hyperparameters replaced by `overrides`,
    initialised from `rngs` (default `nnx.Rngs(seed)`); see `build_model_and_workload`."""
    model, _ = build_model_and_workload(workload, overrides, rngs=rngs, seed=seed, max_bytes=max_bytes, source=source)
    return model


def build_model_and_workload(
    workload: str,
    overrides: Mapping[str, object] | None = None,
    *,
    rngs: nnx.Rngs | None = None,
    seed: int = 0,
    max_bytes: float = MAX_MODEL_BYTES,
    source: str = "workload",
) -> tuple[LayeredModel, Workload]:
    """(model, layer table) of zoo workload `workload` at its hyperparameters replaced by `overrides`.

    Raises ConfigError for an unknown workload, one without a Flax model, a bad override (naming
    `source`, e.g. "--set"), or a model whose table holds more than `max_bytes` of parameters.
    """
    if workload not in ZOO:
        raise ConfigError(
            "workload",
            workload,
            "has no Flax model: only zoo workloads have one (a table file keeps its zoo name, "
            f"e.g. from hps workload export); models exist for {', '.join(model_workloads())}",
        )
    family = base_workload(workload)
    if family not in MODELS:
        raise ConfigError("workload", workload, f"has no Flax model; models exist for {', '.join(model_workloads())}")
    values = checked_hyperparameters(workload, overrides, source)
    table = ZOO[workload](**values)
    size = sum(layer.dense_param_bytes + layer.sparse_param_bytes for layer in table.layers)
    if size > max_bytes:
        raise ConfigError(
            "workload",
            workload,
            f"holds {size / 2**30:.1f} GiB of parameters, over the {max_bytes / 2**30:.1f} GiB a model may "
            f"allocate here; use a -small variant or smaller hyperparameters (--set)",
        )
    # One compiled initialisation rather than an eager compile per parameter shape (and XLA's
    # persistent cache keeps it).
    init = nnx.jit(lambda rngs: MODELS[family](**values, rngs=rngs))
    return init(rngs if rngs is not None else nnx.Rngs(seed)), table


def model_from_spec(
    spec: str, overrides: Mapping[str, object] | None = None, *, source: str = "overrides"
) -> LayeredModel:
    """The model `spec` names: "MODULE:FACTORY" (an importable module, or a path to a .py file, and
    a callable in it returning a LayeredModel, called with `overrides` as keyword arguments) or a
    zoo workload with a Flax model (`build_model(spec, **overrides)`).

    Raises ConfigError naming `spec` when the module cannot be imported, FACTORY is missing or
    fails, or what it returns is not a LayeredModel.
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep:
        return build_model(spec, source=source, **dict(overrides or {}))
    if not module_name or not attr:
        raise ConfigError(spec, "", "expected MODULE:FACTORY (a module or .py file, and a callable in it)")
    module = _import(spec, module_name)
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise ConfigError(spec, attr, f"{module_name} has no callable {attr!r}")
    try:
        model = factory(**dict(overrides or {}))
    except SystemExit as exit_:  # sys.exit() in the user's code would end hps silently, status and all
        raise ConfigError(
            spec, attr, f"calling it called sys.exit({exit_.code!r}); a factory must return a model"
        ) from None
    except Exception as error:  # the user's code: report it as the spec's problem
        raise ConfigError(spec, attr, f"calling it failed: {type(error).__name__}: {error}") from error
    if not isinstance(model, LayeredModel):
        raise ConfigError(
            spec, attr, f"returned {type(model).__name__}, not a LayeredModel (hps.models.base.LayeredModel)"
        )
    return model


def _import(spec: str, module_name: str) -> ModuleType:
    """The module `module_name` names: a .py file path, else a dotted module name."""
    path = Path(module_name)
    try:
        if module_name.endswith(".py") or path.is_file():
            if not path.is_file():
                if not (path.exists() or path.is_symlink()):
                    raise ConfigError(spec, "", f"no such file {module_name}")
                from hps.config.inputs import require_regular_file

                require_regular_file(path, spec, "Python module (.py)")  # names what it is instead
            loader_spec = importlib.util.spec_from_file_location(f"hps_user_model_{path.stem}", path)
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[loader_spec.name] = module  # dataclasses and pickling look classes up here
            try:
                loader_spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[loader_spec.name]
                raise
            return module
        return importlib.import_module(module_name)
    except ConfigError:
        raise
    except SystemExit as exit_:
        raise ConfigError(spec, "", f"importing {module_name} called sys.exit({exit_.code!r})") from None
    except Exception as error:  # ImportError, SyntaxError, or anything the module raises
        raise ConfigError(spec, "", f"cannot import {module_name}: {type(error).__name__}: {error}") from error
