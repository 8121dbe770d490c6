"""MaxText: a plan as a MaxText config (YAML) that inherits `base.yml`.

Key names checked against AI-Hypercomputer/maxtext at e591f30cbbf217ed67ef71263ec0538239f9c3b8:
`src/maxtext/configs/base.yml` (the keys and their defaults), `src/maxtext/configs/types.py` (the
pipeline rule num_stages x num_pipeline_repeats x num_layers_per_pipeline_stage = decoder layers,
num_pipeline_microbatches a multiple of the stages, the global batch int(devices x
per_device_batch_size) x gradient_accumulation_steps), `src/maxtext/configs/pyconfig.py`
(`base_config` found beside the file or in MaxText's configs folder) and
`src/maxtext/layers/decoders.py` (remat policies: "full" keeps only each layer's input,
"minimal_with_context" saves everything). Run it with
`python3 -m maxtext.trainers.pre_train.train FILE.yml run_name=...`.

Axes: ICI inside a slice, DCN across slices. On TPUs a slice is the type's leading network
dimensions at the first dimension's bandwidth (256 v6e chips, a v5p slice); t sits on ICI, the
DCN axes take data parallelism first, then pipeline stages. GPUs carry no `slice_index`, so
MaxText counts one slice (`max_utils.get_num_slices`) and every axis is ICI; its mesh puts the
tensor axis innermost, inside a node.
"""

from __future__ import annotations

import math

from hps.config.frameworks import FRAMEWORK_FAMILIES
from hps.executor.export.common import Export, Layout, even_blocks, node_layout, quoted

SOURCE = "AI-Hypercomputer/maxtext@e591f30cbbf217ed67ef71263ec0538239f9c3b8"
FRAMEWORK = "MaxText"
FAMILIES = FRAMEWORK_FAMILIES["maxtext"]


def slice_units(layout: Layout) -> int:
    """Units one slice holds: on TPUs the product of the leading network dimensions whose
    bandwidth is the first dimension's (256 v6e chips, a v5p slice); on GPUs the whole job."""
    if layout.family != "tpu":
        return layout.devices
    dimensions = layout.resource.network.dimensions
    units = 1
    for dimension in dimensions:
        if dimension.bandwidth != dimensions[0].bandwidth:
            break
        units *= dimension.size
    return units


def mesh_axes(layout: Layout) -> dict[str, int]:
    """The ici_* and dcn_* parallelism keys: t on ICI; the slices' DCN axis takes data
    parallelism first (d's common factor with the slices), the rest pipeline stages. ZeRO 3
    shards on the fsdp axis, ZeRO 0 to 2 replicate on the data axis."""
    per_slice = slice_units(layout)
    slices = 1 if layout.devices <= per_slice else layout.devices // per_slice
    if layout.devices > per_slice and layout.devices % per_slice:
        problem = f"{layout.devices} devices do not fill whole slices of {per_slice} {layout.resource.name}"
        raise layout.refuse("stages[0].dp", problem)
    if layout.tp > layout.devices // slices:
        problem = f"{FRAMEWORK} keeps tensor parallelism inside a slice of {per_slice} units"
        raise layout.refuse("stages[0].tp", problem)
    dcn_data = math.gcd(layout.dp, slices)
    dcn_pipeline = slices // dcn_data
    if layout.pp % dcn_pipeline:
        problem = f"{slices} slices do not split into data and pipeline axes of d {layout.dp} x p {layout.pp}"
        raise layout.refuse("stages", problem)
    data = "fsdp" if layout.zero == 3 else "data"
    other = "data" if data == "fsdp" else "fsdp"
    return {
        f"ici_{data}_parallelism": layout.dp // dcn_data,
        f"ici_{other}_parallelism": 1,
        "ici_tensor_parallelism": layout.tp,
        "ici_pipeline_parallelism": layout.pp // dcn_pipeline,
        f"dcn_{data}_parallelism": dcn_data,
        f"dcn_{other}_parallelism": 1,
        "dcn_tensor_parallelism": 1,
        "dcn_pipeline_parallelism": dcn_pipeline,
    }


def batch_keys(layout: Layout) -> dict[str, object]:
    """per_device_batch_size over all devices, and how the batch is cut: pipeline micro-batches
    with p > 1, gradient accumulation steps with p = 1. MaxText rounds int(devices x size)."""
    micro_batches = layout.micro_batches
    keys: dict[str, object] = {}
    if layout.pp > 1:
        if micro_batches % layout.pp:
            problem = f"{FRAMEWORK} needs the micro-batches ({micro_batches}) a multiple of the {layout.pp} stages"
            raise layout.refuse("job.micro_batch", problem)
        per_pass, keys["num_pipeline_microbatches"] = layout.batch, micro_batches
        keys["gradient_accumulation_steps"] = 1
    else:
        per_pass, keys["gradient_accumulation_steps"] = layout.micro_batch, micro_batches
    size = per_pass / layout.devices
    if int(layout.devices * size) != per_pass:
        problem = f"{per_pass} sequences over {layout.devices} devices is no per-device batch MaxText rounds back"
        raise layout.refuse("job.micro_batch", problem)
    return {"per_device_batch_size": int(size) if size.is_integer() else size, **keys}


def maxtext_config(layout: Layout) -> dict[str, object]:
    """The config's keys in the order they are written."""
    shape, v = layout.shape, layout.virtual_stages
    if layout.fp8 and layout.family != "gpu":
        problem = f"{FRAMEWORK}'s fp8 quantization runs on NVIDIA GPUs, not {layout.family}"
        raise layout.refuse("stages[0].type", problem)
    config: dict[str, object] = {
        "base_config": "base.yml",
        "run_name": f"hps-{shape.name}",
        "hardware": "tpu" if layout.family == "tpu" else "gpu",
        "decoder_block": "llama2" if shape.gated_ffn else "gpt3",
        "base_num_decoder_layers": shape.layers,
        "base_emb_dim": shape.hidden,
        "base_num_query_heads": shape.heads,
        "base_num_kv_heads": shape.kv_heads,
        "base_mlp_dim": shape.ffn,
        "head_dim": shape.head_dim,
        "vocab_size": shape.vocab,
        "mlp_activations": ["silu", "linear"] if shape.gated_ffn else ["gelu"],
        "logits_via_embedding": shape.tied_embedding,
        "max_target_length": shape.seq_len,
        **mesh_axes(layout),
    }
    if layout.pp > 1:
        per_stage = even_blocks(layout, FRAMEWORK, v)
        config["num_layers_per_pipeline_stage"] = per_stage // v
        config["num_pipeline_repeats"] = v
    elif v > 1:
        raise layout.refuse("stages", f"{v} virtual stages need at least 2 pipeline stages")
    config.update(batch_keys(layout))
    config["steps"] = layout.steps
    if layout.recompute == "selective":
        raise layout.refuse(
            "job.recompute", f"{FRAMEWORK}'s remat policies name the tensors they save; plan none or full"
        )
    config["remat_policy"] = "full" if layout.recompute == "full" else "minimal_with_context"
    config["dtype"] = "bfloat16"
    config["weight_dtype"] = "float32"
    config["opt_type"] = "sgd" if layout.precision == "fp32-sgd" else "adamw"
    if layout.zero in (1, 2):
        config["shard_optimizer_over_data"] = True
    if layout.fp8:
        config["quantization"] = "fp8"
    return config


def export_maxtext(layout: Layout) -> Export:
    config = maxtext_config(layout)
    per_slice = slice_units(layout)
    header = [
        f"# hps export --to maxtext: {layout.shape.name}, {layout.devices} {layout.resource.name} = "
        f"t {layout.tp} x p {layout.pp} x d {layout.dp}",
        f"# key names checked against {SOURCE} (src/maxtext/configs/base.yml)",
        "# python3 -m maxtext.trainers.pre_train.train THIS.yml run_name=... base_output_directory=...",
    ]
    text = "\n".join(header + [f"{key}: {quoted(value)}" for key, value in config.items()]) + "\n"
    nodes = max(layout.devices // per_slice, 1) if layout.family == "tpu" else node_layout(layout)[0]
    return Export("maxtext", text, config, layout.devices, nodes, ".yml", SOURCE)
