"""Scaling: throughput of the simulators and of training against the number of environments,
layers and chunks, compile excluded (what `hps bench rl` and `hps bench collective` measure,
swept over small grids).

- placement environment alone (`hps.bench.rl.env_rate`): env steps/s vs environments
  (at `base_layers`) and vs layers (at `base_envs`);
- training updates (`train_rate`, rollout + loss + gradients + optax step): env steps/s vs
  environments, at `train_layers`;
- collective simulator (`hps.bench.collective.simulator_rate`, Themis orders, SCF): simulated
  All-Reduces/s vs chunks, on `networks` random networks of `network_dims` dimensions.

Timings vary from run to run (and with what else the machine runs), so results.json holds
measured rates and is not byte-identical across runs, unlike the other experiments'.
"""

from __future__ import annotations

from dataclasses import dataclass

from hps.studies.base import ExperimentConfig, Summary, register_experiment_kind
from hps.studies.figures import save_loglog_panels


@dataclass(frozen=True, kw_only=True)
class ScalingConfig(ExperimentConfig):
    """Rates against problem size: each grid is a tuple of sizes, swept with the other axis held
    at its base size. `seed` is unused: the benchmarks draw fixed instances."""

    name: str = "scaling"
    envs: tuple[int, ...] = (256, 1024, 4096)
    layers: tuple[int, ...] = (4, 8, 16, 32)
    base_envs: int = 1024
    base_layers: int = 16
    """The sizes each of the two grids above is swept at."""
    train_envs: tuple[int, ...] = (256, 1024)
    train_layers: int = 8
    updates_per_chunk: int = 5
    """Training rate: envs per update, layers per instance and updates per timed chunk."""
    chunks: tuple[int, ...] = (4, 16, 64, 256)
    networks: int = 256
    network_dims: int = 3
    """Collective simulator: chunk-count grid, networks simulated at once and their dimensions."""
    types: int = 4
    """Resource types per placement instance."""
    min_seconds: float = 0.5
    """Timed calls per point last at least this long (after the compiling call)."""

    def check(self) -> None:
        if not all(4 <= n <= 32 for n in (*self.layers, self.base_layers, self.train_layers)):
            raise ValueError("layers: placement instances have 4 to 32 layers")
        if not 1 <= self.types <= 8 or not 1 <= self.network_dims <= 4 or max(self.chunks, default=1) > 256:
            raise ValueError("types must be 1..8, network_dims 1..4, chunks at most 256")


def items(config: ScalingConfig):
    env_points = dict.fromkeys(
        [(n, config.base_layers) for n in config.envs] + [(config.base_envs, l) for l in config.layers]
    )
    return [
        *((f"env-n{n}-l{l}", ("env", n, l)) for n, l in env_points),
        *((f"train-n{n}-l{config.train_layers}", ("train", n, config.train_layers)) for n in config.train_envs),
        *((f"collective-c{c}", ("collective", c, config.network_dims)) for c in config.chunks),
    ]


def run_item(config: ScalingConfig, params) -> dict:
    what, size, other = params
    if what == "collective":
        from hps.bench.collective import simulator_rate

        rate = simulator_rate(config.networks, size, dims=other, min_seconds=config.min_seconds)
        return {
            "what": what,
            "chunks": size,
            "dims": other,
            "networks": config.networks,
            "per_s": rate["collectives_per_s"],
            "compile_s": rate["compile_s"],
        }
    from hps.bench.rl import Setting, env_rate, train_rate

    setting = Setting(num_envs=size, layers=other, types=config.types, repeats=1, min_seconds=config.min_seconds)
    if what == "env":
        rate = env_rate(setting)
    else:
        import jax

        # every accelerator, but one CPU device: `hps run` gives a CPU process 8 host devices for
        # the executor's pools, and training over them would measure another setting
        devices = jax.devices()[:1] if jax.default_backend() == "cpu" else None
        rate = train_rate(None, setting, updates_per_chunk=config.updates_per_chunk, devices=devices)
    return {
        "what": what,
        "envs": size,
        "layers": other,
        "per_s": rate[f"{what}_steps_per_s"],
        "compile_s": rate[f"{what}_compile_s"],
    }


LABELS = {
    "env": ("placement env alone", "env steps/s"),
    "train": ("training updates", "env steps/s"),
    "collective": ("collective simulator", "All-Reduces/s"),
}


def summarize(config: ScalingConfig, results: dict[str, dict]) -> Summary:
    def line(what, x, **fixed):
        points = sorted(
            (r[x], r["per_s"])
            for r in results.values()
            if r["what"] == what and all(r[k] == v for k, v in fixed.items())
        )
        return [p[0] for p in points], [p[1] for p in points]

    rows = []
    for r in results.values():
        setting = (
            f"{r['chunks']} chunks, {r['networks']} networks x {r['dims']} dims"
            if r["what"] == "collective"
            else f"{r['envs']} envs x {r['layers']} layers x {config.types} types"
        )
        rows.append(
            [LABELS[r["what"]][0], setting, f"{r['per_s']:,.0f}", LABELS[r["what"]][1], round(r["compile_s"], 1)]
        )
    panels = [
        (
            "vs environments",
            "environments",
            "env steps/s",
            {
                "env alone": line("env", "envs", layers=config.base_layers),
                "training": line("train", "envs", layers=config.train_layers),
            },
        ),
        ("vs layers", "layers", "env steps/s", {"env alone": line("env", "layers", envs=config.base_envs)}),
        ("vs chunks", "chunks per All-Reduce", "All-Reduces/s", {"collective simulator": line("collective", "chunks")}),
    ]
    panels = [p for p in panels if any(xs for xs, _ in p[3].values())]

    def draw(path):
        save_loglog_panels(path, panels, title="simulator and training throughput (compile excluded)")

    note = (
        "Rates after the compiling call (its time is the compile_s column). Training counts the env steps "
        f"of its rollouts, at {config.train_layers} layers, {config.updates_per_chunk} updates per compiled chunk. "
        "Timings vary between runs: this results.json is a measurement, not a deterministic result."
    )
    return Summary(
        results={"points": results, "types": config.types},
        headers=["loop", "setting", "rate", "unit", "compile_s"],
        rows=rows,
        figures=[("scaling.png", draw)],
        markdown=note,
        title="Scaling: simulator and training throughput",
    )


register_experiment_kind(ScalingConfig, items=items, run_item=run_item, summarize=summarize)
