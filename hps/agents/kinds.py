"""The two trainable policies, placement and collective, behind one interface, so checkpoints,
training sessions and `hps train` treat them alike.

A `PolicyKind` knows its config type and how to turn it into JSON and back, how to build a
fresh TrainState, the jitted train chunk, the policy functions, and a held-out evaluator
(params -> {"eval_…": float}) for the learning curve.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

import jax

from hps.errors import ConfigError


@dataclass(frozen=True)
class PolicyKind:
    name: str
    config_type: type
    config_from_dict: Callable[[dict], Any]
    config_to_dict: Callable[[Any], dict]
    init_state: Callable[..., Any]  # (config, *, devices) -> TrainState
    make_train: Callable[..., Any]  # (config, *, devices) -> jitted train_chunk
    policy: Callable[[Any], Any]  # config -> policy functions
    evaluator: Callable[[Any], Callable[[Any], dict]]  # config -> (params -> metrics)


def _placement_config(data: dict):
    from hps.agents.policy import PolicySpec
    from hps.agents.train import TrainConfig
    from hps.envs.generators import InstanceSplit

    data = dict(data, policy=PolicySpec.from_dict(data["policy"]), split=InstanceSplit(**data["split"]))
    return TrainConfig(**data)


def _placement_evaluator(config):
    from hps.agents.evaluation import heldout_evaluator

    return heldout_evaluator(config)


def _collective_evaluator(config, count: int = 128):
    """Greedy decoding on `count` held-out networks: mean utilization, learned and Themis."""
    from hps.agents.collective_eval import evaluate_instances
    from hps.agents.collective_policy import CollectivePolicyFunctions
    from hps.envs.network_gen import HELDOUT_NETWORKS, generate_collectives

    instances = generate_collectives(jax.random.PRNGKey(2024), count, HELDOUT_NETWORKS)
    policy, env = CollectivePolicyFunctions(config.policy), config.env()

    def evaluate(params):
        mean = evaluate_instances(policy, params, env, instances)["mean"]
        return {"eval_utilization": mean["learned"], "eval_themis_utilization": mean["themis"]}

    return evaluate


def placement_kind() -> PolicyKind:
    from hps.agents.policy import PolicyFunctions
    from hps.agents.train import TrainConfig, init_train_state, make_train

    return PolicyKind("placement", TrainConfig, _placement_config, dataclasses.asdict, init_train_state, make_train,
                      lambda config: PolicyFunctions(config.policy), _placement_evaluator)  # fmt: skip


def collective_kind() -> PolicyKind:
    from hps.agents.collective_policy import CollectivePolicyFunctions
    from hps.agents.collective_train import CollectiveTrainConfig, init_collective_state, make_collective_train

    return PolicyKind("collective", CollectiveTrainConfig, CollectiveTrainConfig.from_dict,
                      lambda config: config.to_dict(), init_collective_state, make_collective_train,
                      lambda config: CollectivePolicyFunctions(config.policy), _collective_evaluator)  # fmt: skip


KINDS = {"placement": placement_kind, "collective": collective_kind}


def kind_named(name: str, source: str = "checkpoint") -> PolicyKind:
    if name not in KINDS:
        raise ConfigError(source, "spec.kind", f"unknown policy kind {name!r}; hps knows {', '.join(KINDS)}")
    return KINDS[name]()


def kind_of(config) -> PolicyKind:
    """The kind whose config type `config` is (ConfigError otherwise)."""
    for make in KINDS.values():
        kind = make()
        if isinstance(config, kind.config_type):
            return kind
    raise ConfigError("experiment", "CONFIG", f"must be a TrainConfig or CollectiveTrainConfig, got {type(config).__name__}")
