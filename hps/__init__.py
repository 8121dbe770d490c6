"""hps: plan and run deep-learning training on heterogeneous hardware.

The Python API (docs/api.md): load a workload and a catalogue, build a `Problem`, `plan` it with
any of `planners()`, `evaluate` a plan, simulate an All-Reduce (`allreduce`), `train` a policy
and `execute` a plan. Names are imported on first use, so `import hps` stays as cheap as numpy.
"""

from hps.lazy import lazy_exports

__version__ = "0.1.0"

__getattr__, _LAZY = lazy_exports(
    "hps",
    {
        "errors": ("ConfigError", "HpsError", "InstanceTooLarge", "RunFolderBusy", "SearchSpaceTooLarge"),
        "config.types": ("Job", "ParallelStage", "PlanFile"),
        "api.loading": (
            "load_workload",
            "load_catalog",
            "load_network",
            "default_job",
            "read_plan",
            "write_plan",
            "derive_workload",
        ),
        "contract.types": ("Plan", "PlanResult", "PlanScore", "Budget"),
        "api.planning": ("Problem", "plan", "planners", "evaluate"),
        "api.collectives": ("allreduce", "allreduce_batch", "AllReduce"),
        "api.learning": ("train", "load_policy", "Policy", "Training"),
        "api.running": ("execute", "Execution"),
    },
)
__all__ = [*_LAZY, "__version__"]
