"""Learning from Python: train a placement or collective policy in a run folder (resuming it),
and plan with a trained placement policy (docs/learning.md)."""

from __future__ import annotations

import dataclasses
import os

from hps.api.checks import check_count, check_flag, check_path, check_positive, check_seed
from hps.api.planning import Problem, checked_problem
from hps.contract.types import PlanResult
from hps.errors import ConfigError


@dataclasses.dataclass(frozen=True)
class Training:
    """A training session's outcome: the run folder, every metrics record of the run (earlier
    sessions' included; one per chunk: reward, feasible share, cost ratio, …), and the final
    policy parameters (a pytree)."""

    out: str
    records: tuple[dict, ...]
    params: object


def train(config, out: str | os.PathLike, *, minutes: float | None = None) -> Training:
    """Train `config` (a `hps.placement.agent.train.TrainConfig` or a
    `hps.collective.agent.train.CollectiveTrainConfig`) in run folder `out` until its num_chunks
    chunks are done or `minutes` have passed (checked between chunks), resuming from the folder's
    latest checkpoint. RunFolderBusy when another run holds the folder."""
    from hps.collective.agent.train import CollectiveTrainConfig
    from hps.placement.agent.train import TrainConfig
    from hps.rl.session import final_params, train_session

    if not isinstance(config, (TrainConfig, CollectiveTrainConfig)):
        raise ConfigError("config", "", f"must be a TrainConfig or CollectiveTrainConfig, got {type(config).__name__}")
    out = check_path(out, "out")
    if minutes is not None:
        minutes = check_positive(minutes, "minutes")
    state, records = train_session(config, out, minutes=minutes)
    return Training(out=os.fspath(out), records=tuple(records), params=final_params(state))


class Policy:
    """A trained placement policy loaded from its run folder: `plan(problem)` samples plans from
    it, keeps the best under the exact model, as `hps plan` does."""

    def __init__(self, path: str | os.PathLike, step: int | None = None):
        from hps.placement.agent.checkpoint import load_policy as load

        path = check_path(path, "path")
        if step is not None:
            step = check_count(step, "step", 0)
        self.functions, self.params, self.spec = load(path, step)
        self.path = path

    @property
    def step(self) -> int:
        """The training step of the loaded checkpoint."""
        return int(self.spec["step"])

    def plan(self, problem: Problem, plans: int = 64, seed: int = 0, refine: bool = False) -> PlanResult:
        """The best of `plans` distinct plans sampled from the policy and its greedy plan for
        `problem` (schedule model), `refine`: then polished by stage moves. seconds: the planning
        time, compile excluded; evaluations: the plans scored."""
        from hps.placement.agent.planner import plan as sample_plans
        from hps.placement.agent.policy_planner import sampled_result

        problem = checked_problem(problem)
        plans = check_count(plans, "plans", 1, 1 << 16)
        seed = check_seed(seed)
        result = sample_plans(
            self.functions,
            self.params,
            problem.workload,
            problem.catalog,
            problem.job,
            samples=plans,
            seed=seed,
            polish=check_flag(refine, "refine"),
        )
        return sampled_result(problem, result)


def load_policy(path: str | os.PathLike, step: int | None = None) -> Policy:
    """The placement policy saved in `path` (a run folder of `hps train` or its checkpoints/), at
    `step` (None: the latest)."""
    return Policy(path, step)
