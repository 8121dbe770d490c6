"""Export a plan file to the tools practitioners launch (docs/export.md): Megatron-LM's
`pretrain_gpt.py` flags, a MaxText config, a torchtitan job config and a SkyPilot task.

`export_plan(plan, workload, catalog, shape, target, source=...)` checks that the plan is one
framework job (one type, one t and one d for every stage, whole blocks a stage) and returns the
`Export`; a plan the framework cannot run is refused with a ConfigError naming `source` and the
field. Each target is a module of its own, `common` what they share.
"""

from __future__ import annotations

import importlib

from hps.config.types import Catalog, PlanFile, Workload
from hps.executor.export.common import DecoderShape, Export, ExportOptions, decoder_shape, uniform_layout

TARGETS = ("megatron", "maxtext", "torchtitan", "skypilot")
"""Export targets, each the module hps.executor.export.TARGET with FRAMEWORK, FAMILIES and export_TARGET."""


def export_plan(
    plan: PlanFile,
    workload: Workload,
    catalog: Catalog,
    shape: DecoderShape,
    target: str,
    *,
    source: str = "plan",
    options: ExportOptions | None = None,
) -> Export:
    """`plan` (of `workload`, a decoder of `shape`, on `catalog`) as `target` writes it;
    ConfigError naming `source` and the field when that framework cannot run it."""
    if target not in TARGETS:
        from hps.errors import ConfigError

        raise ConfigError("target", "", f"must be one of {', '.join(TARGETS)}, got {target!r}")
    options = options or ExportOptions()
    module = importlib.import_module(f"hps.executor.export.{target}")
    families = module.FAMILIES
    framework = module.FRAMEWORK
    if target == "skypilot":  # the run line's framework decides what it runs
        launched = module
        if options.launch in TARGETS:
            launched = importlib.import_module(f"{__name__}.{options.launch}")
        families = tuple(f for f in families if f in launched.FAMILIES)
        framework = f"{framework} ({launched.FRAMEWORK})"
    layout = uniform_layout(
        plan, workload, catalog, shape, source=source, framework=framework, families=families, options=options
    )
    return getattr(module, f"export_{target}")(layout)


__all__ = ["TARGETS", "DecoderShape", "Export", "ExportOptions", "decoder_shape", "export_plan"]
