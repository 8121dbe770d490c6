"""Experiments: typed configs (plain Python files defining `config()`), run item by item with
resume, summarised as results.json, PNG figures and report.md (`hps run EXPERIMENT.py`).

A new kind: a module here defining a frozen `ExperimentConfig` subclass and calling
`register_experiment_kind(ConfigType, items=..., run_item=..., summarize=...)` (see hps.studies.base),
and named in `hps.studies.loader.KIND_MODULES` so that `hps run` lists it.
"""

from hps.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(
    __name__,
    {
        "base": ("ExperimentConfig", "Summary", "experiment_kind_of", "register_experiment_kind"),
        "loader": ("load_config",),
        "runner": ("run_experiment",),
    },
)
