"""What every export target shares: the decoder's shape, the checked uniform layout of a plan file,
and the exported text with its settings.

A framework runs one device type, one tensor-parallel degree t and one data-parallel degree d for
every pipeline stage, and a stage holds whole transformer blocks (the embedding row rides with the
first stage, the head row with the last). `uniform_layout` checks that a plan is such a layout and
refuses it otherwise with a ConfigError naming the plan file and the field (`stages[2].tp`).

Units: batch, micro-batches and samples in sequences; `micro_batch` is the plan's (across a
stage's d replicas), `micro_batch_per_replica` = micro_batch / d is what a framework calls its
micro-batch size; `blocks` lists the transformer blocks of each pipeline stage.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from hps.config.frameworks import device_family
from hps.config.planfile import check_plan_against
from hps.config.types import Catalog, PlanFile, ResourceType, Workload
from hps.errors import ConfigError

DECODERS = ("DecoderLM", "Llama3")
"""The zoo families `decoder_shape` reads (hps.workloads.llm): embedding, blocks, head."""


@dataclass(frozen=True)
class DecoderShape:
    """A decoder LM's sizes as the frameworks name them: `layers` blocks of width `hidden`,
    `heads` query heads and `kv_heads` key/value heads, FFN width `ffn`, `seq_len` tokens a
    sequence, `vocab` tokens; SwiGLU FFN when `gated_ffn`, the LM head tied to the embedding when
    `tied_embedding`, a learned position table when `learned_positions` (else rotary)."""

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    seq_len: int
    vocab: int
    gated_ffn: bool
    tied_embedding: bool
    learned_positions: bool

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


def decoder_shape(workload: str, overrides: dict | None = None, source: str = "plan") -> DecoderShape:
    """The shape of zoo decoder LM `workload` at its hyperparameters replaced by `overrides`;
    ConfigError naming `source` and `workload` for anything else (a TOML layer table names no
    hidden size or heads)."""
    from hps.workloads import ZOO, base_workload, checked_hyperparameters
    from hps.workloads.registry import FACTORIES

    known = [name for name in ZOO if type(FACTORIES[base_workload(name)].architecture).__name__ in DECODERS]
    if workload not in known:
        problem = f"export needs a zoo decoder LM ({', '.join(known)}); got {workload!r}"
        raise ConfigError(source, "workload", problem)
    values = checked_hyperparameters(workload, overrides, source)
    architecture = FACTORIES[base_workload(workload)].architecture.replaced(values)
    fields = {f.name: getattr(architecture, f.name) for f in dataclasses.fields(DecoderShape) if f.name != "name"}
    return DecoderShape(name=workload, **fields)


@dataclass(frozen=True)
class ExportOptions:
    """What a plan file does not hold: for SkyPilot, the framework its run line `launch`es."""

    launch: str = "megatron"


@dataclass(frozen=True)
class Layout:
    """A plan as one framework job: `resource` (one type) at t = `tp`, d = `dp`, `blocks`
    transformer blocks per pipeline stage, and the job."""

    source: str
    shape: DecoderShape
    resource: ResourceType
    family: str
    tp: int
    dp: int
    blocks: tuple[int, ...]
    batch: int
    micro_batch: int
    samples: float
    precision: str
    zero: int
    recompute: str
    virtual_stages: int
    """Model chunks a device (the interleaved schedule; 1: none), the plan's job's."""
    fp8: bool
    """FP8 matmuls, the plan's job's."""
    options: ExportOptions

    @property
    def pp(self) -> int:
        return len(self.blocks)

    @property
    def devices(self) -> int:
        return self.tp * self.pp * self.dp

    @property
    def micro_batch_per_replica(self) -> int:
        return self.micro_batch // self.dp

    @property
    def micro_batches(self) -> int:
        """M = batch / micro_batch, the micro-batches an iteration runs through the pipeline."""
        return self.batch // self.micro_batch

    @property
    def steps(self) -> int:
        """Iterations that train `samples` sequences."""
        return math.ceil(self.samples / self.batch)

    def refuse(self, field: str, problem: str) -> ConfigError:
        return ConfigError(self.source, field, problem)


NODE_UNITS = {"l4": 8, "a100-40": 8, "a100-80": 8, "h100": 8, "h200": 8, "b200": 8, "gb200": 4}
"""Units a cloud node (one VM) holds, as the shipped catalogues' comments give them: 8 GPUs in
g6.48xlarge, p4d/p4de, p5/p5en and p6-b200; 4 GB200 in Azure's ND GB200 v6."""


def node_units(resource: ResourceType) -> int:
    """Units a node holds: NODE_UNITS, else the type's first network dimension."""
    return NODE_UNITS.get(resource.name, resource.network.dimensions[0].size)


def node_layout(layout: Layout) -> tuple[int, int]:
    """(nodes, units a node) of the job: whole nodes of the type, or one node of fewer units."""
    per_node = node_units(layout.resource)
    if layout.devices <= per_node:
        return 1, layout.devices
    if layout.devices % per_node:
        problem = f"{layout.devices} devices do not fill whole nodes of {per_node} {layout.resource.name}"
        raise layout.refuse("stages[0].dp", problem)
    return layout.devices // per_node, per_node


def stage_blocks(plan: PlanFile, workload: Workload, source: str, framework: str) -> tuple[int, ...]:
    """The transformer blocks of each stage (a block's attention row has cut_after false); a
    stage of none (only the embedding row or only the head row) is refused."""
    blocks = []
    for j, stage in enumerate(plan.stages):
        rows = workload.layers[stage.first : stage.last + 1]
        count = sum(not row.cut_after for row in rows)
        if count == 0:
            what = ", ".join(row.name for row in rows)
            problem = f"holds no transformer block (only {what}); {framework} puts it with a stage's blocks"
            raise ConfigError(source, f"stages[{j}]", problem)
        blocks.append(count)
    return tuple(blocks)


def uniform_layout(
    plan: PlanFile,
    workload: Workload,
    catalog: Catalog,
    shape: DecoderShape,
    *,
    source: str,
    framework: str,
    families: tuple[str, ...],
    options: ExportOptions | None = None,
) -> Layout:
    """The plan as one `framework` job on a type of `families`; ConfigError naming `source` and
    the field for a plan that framework cannot run: mixed types, per-stage t or d that differ, a
    type it does not run, a stage without a whole block, a table that is not `shape`'s."""
    options = options or ExportOptions()
    check_plan_against(plan, workload, catalog, source)
    blocks = sum(not row.cut_after for row in workload.layers)
    if blocks != shape.layers or len(workload.layers) != 2 * shape.layers + 2:
        problem = f"the layer table is not the decoder {shape.name!r} ({shape.layers} blocks, embedding and head)"
        raise ConfigError(source, "workload", problem)
    first = plan.stages[0]
    for j, stage in enumerate(plan.stages[1:], 1):
        for field in ("type", "tp", "dp"):
            if getattr(stage, field) != getattr(first, field):
                ours, theirs = getattr(first, field), getattr(stage, field)
                problem = (
                    f"{framework} runs one {'device type' if field == 'type' else field} for every stage; "
                    f"stages[0] has {ours!r}, stages[{j}] {theirs!r}"
                )
                raise ConfigError(source, f"stages[{j}].{field}", problem)
    resource = catalog.resources[catalog.index(first.type)]
    family = device_family(resource)
    if family not in families:
        problem = f"{framework} does not run {first.type!r} ({family}); it runs {' and '.join(families)} types"
        raise ConfigError(source, "stages[0].type", problem)
    job = plan.job
    if job.micro_batch is None:
        raise ConfigError(source, "job.micro_batch", f"{framework} needs the plan's micro-batch; got None")
    if not float(job.batch).is_integer():
        raise ConfigError(source, "job.batch", f"{framework} takes a whole number of sequences, got {job.batch:g}")
    return Layout(
        source=source,
        shape=shape,
        resource=resource,
        family=family,
        tp=first.tp,
        dp=first.dp,
        blocks=stage_blocks(plan, workload, source, framework),
        batch=int(job.batch),
        micro_batch=int(job.micro_batch),
        samples=float(job.samples),
        precision=job.precision,
        zero=job.zero,
        recompute=job.recompute,
        virtual_stages=int(job.virtual_stages),
        fp8=bool(job.fp8),
        options=options,
    )


def even_blocks(layout: Layout, framework: str, per_chunk: int = 1) -> int:
    """The blocks of every stage when the split is even (each a multiple of `per_chunk`);
    ConfigError naming the first stage that differs otherwise."""
    count = layout.blocks[0]
    for j, blocks in enumerate(layout.blocks):
        if blocks != count:
            problem = f"{framework} gives every stage the same blocks; stages[0] has {count}, stages[{j}] {blocks}"
            raise layout.refuse(f"stages[{j}].last", problem)
    if count % per_chunk:
        problem = f"{count} blocks a stage do not split into {per_chunk} virtual stages of whole blocks"
        raise layout.refuse("stages[0].last", problem)
    return count


@dataclass(frozen=True)
class Export:
    """What a target writes: `text` (a shell command, YAML or TOML) and its `settings` (flag or
    key -> value), for `devices` units; `source` names what the names were checked against."""

    target: str
    text: str
    settings: dict
    devices: int
    nodes: int
    suffix: str
    source: str

    def document(self) -> dict:
        """The JSON document `hps export --json` prints."""
        return {
            "target": self.target,
            "devices": self.devices,
            "nodes": self.nodes,
            "settings": self.settings,
            "checked_against": self.source,
            "text": self.text,
        }


def quoted(value: object) -> str:
    """`value` as a YAML or TOML scalar or flow list: JSON's spelling, booleans in lower case."""
    return json.dumps(value)
