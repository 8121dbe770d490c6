"""hps: plan and run deep-learning training on heterogeneous hardware."""

from hps.errors import ConfigError, HpsError, InstanceTooLarge, SearchSpaceTooLarge

__version__ = "0.1.0"
__all__ = ["ConfigError", "HpsError", "InstanceTooLarge", "SearchSpaceTooLarge", "__version__"]
