"""Megatron-LM: a plan as the command line of `pretrain_gpt.py` (NeMo's Megatron-Bridge sets the
same Megatron-Core fields).

Flag names checked against NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553
(megatron-core 0.20.0): `megatron/training/arguments.py` (hand-written flags and the validation of
the pipeline split) and the dataclasses whose fields `ArgumentGroupFactory`
(`megatron/training/argument_utils.py`) turns into `--field-name` flags:
`megatron/core/model_parallel_config.py` (--tensor-model-parallel-size,
--pipeline-model-parallel-size, --bf16), `megatron/core/transformer/transformer_config.py`
(--num-layers, --hidden-size, --ffn-hidden-size, --num-attention-heads, --num-query-groups,
--recompute-*, --fp8-format, --account-for-*-in-pipeline-split and the uneven-split rules),
`megatron/training/config/training_config.py` (--micro-batch-size, --global-batch-size,
--train-samples) and `megatron/training/config/common_config.py` (--use-megatron-fsdp). At that
commit `--virtual-pipeline-model-parallel-size` is no flag (TransformerConfig's field is excluded);
the interleaved schedule is `--num-virtual-stages-per-pipeline-rank`.
"""

from __future__ import annotations

import shlex

from hps.config.frameworks import FRAMEWORK_FAMILIES
from hps.executor.export.common import Export, Layout, node_layout

SOURCE = "NVIDIA/Megatron-LM@d98e8a64ddf34856e74b24714e3bedb2f5a39553 (megatron-core 0.20.0)"
FRAMEWORK = "Megatron-LM"
FAMILIES = FRAMEWORK_FAMILIES["megatron"]

Flags = list[tuple[str, object]]
"""(flag, value) in order; value True is a switch without an argument."""


def pipeline_split_flags(layout: Layout) -> Flags:
    """How Megatron-LM splits the blocks as the plan does. Even: nothing. First and last stage
    one block short of the middle ones: --account-for-embedding/loss-in-pipeline-split (the
    embedding and the loss each count as a layer, as the plan's embedding and head rows ride
    there). Other ends: --decoder-first/last-pipeline-num-layers. The stages between the first
    and the last must hold the same blocks; with v virtual stages every stage's blocks (counting
    the embedding and loss where they count) must split into v chunks."""
    blocks = layout.blocks
    if len(set(blocks)) == 1:
        _check_chunks(layout, [(0, blocks[0])])
        return []
    middle = blocks[1:-1]
    for j, count in enumerate(middle, 1):
        if count != middle[0]:
            problem = (
                f"{FRAMEWORK} splits the stages between the first and the last evenly (its uneven flags set only "
                f"the ends); stages[1] has {middle[0]} blocks, stages[{j}] {count}"
            )
            raise layout.refuse(f"stages[{j}].last", problem)
    per_stage = middle[0] if middle else max(blocks)
    if all(count in (per_stage, per_stage - 1) for count in (blocks[0], blocks[-1])):
        _check_chunks(layout, [(0, per_stage)])
        flags: Flags = []
        if blocks[0] < per_stage:
            flags.append(("--account-for-embedding-in-pipeline-split", True))
        if blocks[-1] < per_stage:
            flags.append(("--account-for-loss-in-pipeline-split", True))
        return flags
    _check_chunks(layout, list(enumerate(blocks)))
    flags = []
    if blocks[0] != per_stage:
        flags.append(("--decoder-first-pipeline-num-layers", blocks[0]))
    if blocks[-1] != per_stage:
        flags.append(("--decoder-last-pipeline-num-layers", blocks[-1]))
    return flags


def _check_chunks(layout: Layout, stages: list[tuple[int, int]]) -> None:
    """Each (stage, layers) splits into v whole chunks (Megatron-LM's rule for v > 1)."""
    v = layout.virtual_stages
    for j, layers in stages:
        if layers % v:
            problem = f"{layers} layers on the stage do not split into {v} virtual stages of whole layers"
            raise layout.refuse(f"stages[{j}].last", problem)


def megatron_flags(layout: Layout) -> Flags:
    """The `pretrain_gpt.py` flags of the layout, in the order the Megatron-LM examples give them."""
    shape, v = layout.shape, layout.virtual_stages
    for count, name in ((shape.heads, "attention heads"), (shape.kv_heads, "query groups (KV heads)")):
        if count % layout.tp:
            problem = f"t = {layout.tp} does not divide the {count} {name} {FRAMEWORK} splits across the ranks"
            raise layout.refuse("stages[0].tp", problem)
    if v > 1 and layout.pp < 2:
        raise layout.refuse("stages", f"{v} virtual stages need at least 2 pipeline stages (the interleaved schedule)")
    flags: Flags = [
        ("--tensor-model-parallel-size", layout.tp),
        ("--pipeline-model-parallel-size", layout.pp),
        *pipeline_split_flags(layout),
    ]
    if v > 1:
        flags.append(("--num-virtual-stages-per-pipeline-rank", v))
    flags += [
        ("--num-layers", shape.layers),
        ("--hidden-size", shape.hidden),
        ("--ffn-hidden-size", shape.ffn),
        ("--num-attention-heads", shape.heads),
    ]
    if shape.kv_heads != shape.heads:
        flags += [("--group-query-attention", True), ("--num-query-groups", shape.kv_heads)]
    flags += [("--seq-length", shape.seq_len), ("--max-position-embeddings", shape.seq_len)]
    if not shape.learned_positions:
        flags.append(("--position-embedding-type", "rope"))
    if shape.gated_ffn:
        flags.append(("--swiglu", True))
    if not shape.tied_embedding:
        flags.append(("--untie-embeddings-and-output-weights", True))
    flags += [
        ("--micro-batch-size", layout.micro_batch_per_replica),
        ("--global-batch-size", layout.batch),
        ("--train-samples", int(layout.samples)),
    ]
    if layout.precision == "bf16-adam":
        flags.append(("--bf16", True))
    if layout.precision == "fp32-sgd":
        flags.append(("--optimizer", "sgd"))
    if layout.fp8:
        flags.append(("--fp8-format", "hybrid"))
    if layout.recompute == "full":
        flags += [("--recompute-granularity", "full"), ("--recompute-method", "uniform"), ("--recompute-num-layers", 1)]
    elif layout.recompute == "selective":
        flags.append(("--recompute-granularity", "selective"))
    if layout.zero in (1, 2):
        flags.append(("--use-distributed-optimizer", True))
    elif layout.zero == 3:
        flags += [("--use-megatron-fsdp", True), ("--data-parallel-sharding-strategy", "optim_grads_params")]
    return flags


def flag_words(flags: Flags) -> list[str]:
    """The flags as command-line words."""
    words = []
    for name, value in flags:
        words += [name] if value is True else [name, str(value)]
    return words


def launch_command(layout: Layout, flags: Flags, launcher: str) -> str:
    """`launcher pretrain_gpt.py FLAGS`, one flag a line."""
    lines = [f"{launcher} pretrain_gpt.py"]
    lines += ["    " + shlex.join(flag_words([flag])) for flag in flags]
    return " \\\n".join(lines)


def export_megatron(layout: Layout) -> Export:
    flags = megatron_flags(layout)
    nodes, per_node = node_layout(layout)
    header = [
        f"# hps export --to megatron: {layout.shape.name}, {layout.devices} {layout.resource.name} = "
        f"t {layout.tp} x p {layout.pp} x d {layout.dp} on {nodes} node(s) of {per_node}",
        f"# flag names checked against {SOURCE}; add your data and tokenizer flags "
        "(--data-path, --tokenizer-type, ...)",
        "# one torchrun a node: set NODE_RANK and MASTER_ADDR on each",
    ]
    launcher = (
        f"torchrun --nnodes {nodes} --nproc-per-node {per_node} --node-rank $NODE_RANK "
        "--master-addr $MASTER_ADDR --master-port 29500"
    )
    text = "\n".join(header) + "\n" + launch_command(layout, flags, launcher) + "\n"
    return Export(
        target="megatron",
        text=text,
        settings={name: value for name, value in flags},
        devices=layout.devices,
        nodes=nodes,
        suffix=".sh",
        source=SOURCE,
    )
