"""The quickstart as an experiment: train a small placement policy (14 chunks of 4,096
environments, at most 2.5 minutes), compare it with every search method and the exhaustive
optimum on ctr-dnn, wide-deep, dlrm and matchnet over cloud-2024, then plan ctr-dnn-small from
the reloaded checkpoint and execute the plan as sharded JAX training.

    hps run experiments/quickstart.py

The same steps as `hps quickstart`, one item each (resumable); the policy trains in
runs/quickstart/policy, which `hps quickstart` uses too.
"""

from hps.studies.quickstart import QuickstartConfig


def config() -> QuickstartConfig:
    return QuickstartConfig(name="quickstart", out="runs/quickstart")
