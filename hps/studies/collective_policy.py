"""Collective policy study: train a collective policy on random networks with REINFORCE
(`hps.collective.agent.train`) for chunks × 10 updates, then compare its greedy decoding with
Themis, the baseline order and the best fixed permutation (all with SCF) by mean bandwidth
utilization T_ideal / T on held-out random networks and on the topology suite at each
(size, chunk counts) of `suite`, with the suite figures per network
(`hps.collective.agent.evaluation`).

Items: "train" (timed as the study reports it: the compile, then the chunks; the trained state is
saved in policy_dir), then "heldout" and one item per suite setting, each evaluating the policy
saved in policy_dir. The training times make results.json a measurement, not byte-identical
across runs; the utilizations are deterministic.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from hps.config.limits import MAX_CHUNKS, chunks_bucket
from hps.errors import ConfigError
from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import grouped_bars
from hps.studies.report import markdown_table
from hps.studies.themis_allreduce import network_paths

POLICIES = ("learned", "themis", "baseline", "best-fixed")
HELDOUT_KEY = 123  # PRNG key of the held-out networks
UPDATES_PER_CHUNK = 10


@dataclass(frozen=True, kw_only=True)
class CollectivePolicyConfig(ExperimentConfig):
    """chunks: training chunks of 10 updates; envs: episodes per update (8 per instance);
    hidden: the policy's hidden width; heldout: held-out random networks; suite: (All-Reduce
    bytes, chunk counts) settings on the topology suite; networks: suite networks (shipped names
    or files, () = every topologies/networks/*.toml); policy_dir: the run folder the trained
    policy is saved in (its checkpoints/). `seed` seeds the training."""

    name: str = "collective_policy"
    chunks: int = 18
    envs: int = 256
    hidden: int = 64
    heldout: int = 512
    suite: tuple[tuple[float, tuple[int, ...]], ...] = ((2.0**30, (64,)), (2.0**26, (16, 64)))
    networks: tuple[str, ...] = ()
    policy_dir: str = "runs/collective-policy-study"

    AT_LEAST = {"networks": 0}

    def check(self) -> None:
        for i, setting in enumerate(self.suite):
            ok = isinstance(setting, tuple) and len(setting) == 2 and isinstance(setting[0], (int, float))
            ok = ok and setting[0] > 0 and isinstance(setting[1], tuple) and len(setting[1]) > 0
            if not (ok and all(isinstance(c, int) and 1 <= c <= MAX_CHUNKS for c in setting[1])):
                raise ValueError(
                    f"suite[{i}]: must be (bytes > 0, (chunk counts in 1..{MAX_CHUNKS}, ...)), got {setting!r}"
                )


def train_config(config: CollectivePolicyConfig):
    """The CollectiveTrainConfig the study trains (ConfigError for envs it cannot split)."""
    from hps.collective.agent.policy import CollectivePolicySpec
    from hps.collective.agent.train import CollectiveTrainConfig

    return CollectiveTrainConfig(
        policy=CollectivePolicySpec(hidden=config.hidden),
        num_envs=config.envs,
        num_chunks=config.chunks,
        updates_per_chunk=UPDATES_PER_CHUNK,
        seed=config.seed,
    )


def saved_spec(policy_dir: str) -> dict | None:
    """The spec document of the latest checkpoint in policy_dir/checkpoints, None when none."""
    from hps.rl import checkpoint

    folder = Path(policy_dir) / "checkpoints"
    if not folder.is_dir():
        return None
    manager = checkpoint.open_manager(folder, read_only=True)
    try:
        return None if manager.latest_step() is None else checkpoint.read_spec(manager)[1]
    finally:
        manager.close()


def suite_label(size: float, chunks: tuple[int, ...]) -> str:
    return f"{size / 2**20:g}MiB-c{'+'.join(str(c) for c in chunks)}"


def items(config: CollectivePolicyConfig):
    from hps.rl.checkpoint import spec_document

    train = train_config(config)
    saved = saved_spec(config.policy_dir)
    if saved is not None and saved != json.loads(json.dumps(spec_document(train))):
        raise ConfigError(
            "config()",
            "policy_dir",
            f"{config.policy_dir} holds a policy trained with another config; remove it or choose another policy_dir",
        )
    network_paths(config.networks)  # a bad network name fails before any work
    suite = [(f"suite-{suite_label(size, chunks)}", ("suite", size, chunks)) for size, chunks in config.suite]
    return [("train", ("train",)), ("heldout", ("heldout",)), *suite]


def train_policy(config: CollectivePolicyConfig) -> dict:
    """Train on one device as the study times it, and save the final state in policy_dir."""
    import jax

    from hps.collective.agent.train import checkpoint_spec, init_collective_state, make_collective_train
    from hps.rl import checkpoint, driver

    train = train_config(config)
    devices = jax.devices()[:1]
    state = init_collective_state(train, devices=devices)
    started = time.perf_counter()
    train_chunk = make_collective_train(train, devices=devices).lower(state).compile()
    compile_s = time.perf_counter() - started
    started = time.perf_counter()
    state, history = driver.run_chunks(train_chunk, state, train.updates_per_chunk, train.num_chunks)
    train_s = time.perf_counter() - started
    utilization = [metrics["utilization"] for metrics in history]
    manager = checkpoint.open_manager(Path(config.policy_dir) / "checkpoints")
    try:
        if manager.latest_step() is None:  # else it holds this very policy (items() checked its spec)
            checkpoint.save(manager, state, train)
    finally:
        manager.close()
    step = int(jax.device_get(state.step))
    return {
        "spec": checkpoint_spec(train),
        "compile_s": compile_s,
        "train_s": train_s,
        "updates_per_s": step / train_s,
        "step": step,
        "chunk_utilization": utilization,
    }


def evaluate(config: CollectivePolicyConfig, what: str, size: float = 0.0, chunks=()) -> dict:
    """The held-out or one suite setting's figures of the policy saved in policy_dir."""
    import jax

    from hps.collective.agent.checkpoint import load_policy
    from hps.collective.agent.evaluation import evaluate_instances, evaluate_suite
    from hps.collective.env.env import CollectiveEnv
    from hps.collective.env.generator import HELDOUT_NETWORKS, generate_collectives

    policy, params, _ = load_policy(config.policy_dir)
    env = train_config(config).env()
    if what == "heldout":
        instances = generate_collectives(jax.random.PRNGKey(HELDOUT_KEY), config.heldout, HELDOUT_NETWORKS)
        held = evaluate_instances(policy, params, env, instances)
        return {"mean": held["mean"], "wins": held["wins"], "losses": held["losses"]}
    if max(chunks) > env.max_chunks:  # the policy has no chunk limit of its own
        env = CollectiveEnv(chunks_bucket(max(chunks)), env.scf)
    suite = evaluate_suite(policy, params, env, network_paths(config.networks), (size,), chunks)
    return {
        "size_bytes": size,
        "chunks": list(chunks),
        **{key: suite[key] for key in ("mean", "wins", "losses", "rows")},
    }


def run_item(config: CollectivePolicyConfig, params) -> dict:
    if params[0] == "train":
        return train_policy(config)
    return evaluate(config, *params)


def summarize(config: CollectivePolicyConfig, results: dict[str, dict]) -> Summary:
    training = results["train"]
    held = results["heldout"]
    suite = [results[f"suite-{suite_label(size, chunks)}"] for size, chunks in config.suite]
    document = {
        **{k: training[k] for k in ("spec", "compile_s", "train_s", "updates_per_s", "step", "chunk_utilization")},
        "policy_dir": config.policy_dir,
        "heldout": held,
        "suite": suite,
    }
    columns = [f"held-out ({config.heldout} networks)"]
    columns += [f"suite {s['size_bytes'] / 2**20:g} MiB, {'+'.join(map(str, s['chunks']))} chunks" for s in suite]
    evaluations = [held, *suite]
    rows = [[name, *(f"{e['mean'][name]:.3f}" for e in evaluations)] for name in POLICIES]
    rows.append(["learned beats themis (> 0.1 %)", *(f"{e['wins']:.1%}" for e in evaluations)])
    rows.append(["themis beats learned (> 0.1 %)", *(f"{e['losses']:.1%}" for e in evaluations)])
    parts = [
        f"Policy (hidden {config.hidden}) trained for {training['step']} updates of {config.envs} episodes "
        f"({config.chunks} chunks of {UPDATES_PER_CHUNK}) in {training['train_s']:.0f} s after a "
        f"{training['compile_s']:.0f} s compile ({training['updates_per_s']:.2f} updates/s); saved in "
        f"{config.policy_dir}. Mean utilization T_ideal / T, greedy decoding, SCF for every policy; "
        "the training times vary between runs."
    ]
    for label, s in zip(columns[1:], suite):
        table = [[r["name"], *(f"{r[p]:.3f}" for p in POLICIES)] for r in s["rows"]]
        parts.append(f"### {label}\n\n" + markdown_table(["instance", *POLICIES], table))

    series = {p: [e["mean"][p] for e in evaluations] for p in POLICIES}
    groups = ["held-out", *(c.removeprefix("suite ") for c in columns[1:])]
    figure = grouped_bars(
        "collective_policy.png",
        groups,
        series,
        ylabel="mean utilization T_ideal / T",
        hline=1.0,
        title="collective policies (SCF)",
    )
    return Summary(
        results=document,
        headers=["policy", *columns],
        rows=rows,
        figures=[figure],
        markdown="\n\n".join(parts),
        title="Collective policy vs Themis on held-out networks and the topology suite",
    )


register_experiment_kind(CollectivePolicyConfig, items=items, run_item=run_item, summarize=summarize)
