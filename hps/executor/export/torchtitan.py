"""torchtitan: a plan as a torchtitan job config (TOML) for its Llama 3 model.

Key names checked against pytorch/torchtitan v0.2.2 (73a0e6979dd10b6b1904098eb3c8f62c18ab87ce,
2026-02-20), the last release that reads TOML job configs (#2386 replaced them with Python
dataclasses afterwards): `torchtitan/config/job_config.py` (sections [model], [training],
[parallelism], [activation_checkpoint]), `torchtitan/distributed/pipeline_parallel.py` (the
stages from `module_fqns_per_model_part`, the micro-batches local_batch_size /
pipeline_parallel_microbatch_size), `torchtitan/train.py` (gradient accumulation global /
(local x data-parallel degree)), `torchtitan/models/llama3/__init__.py` (the flavors 8B, 70B,
405B) and `torchtitan/models/llama3/infra/parallelize.py` (fsdp_reshard_after_forward). Run it
with `torchrun ... -m torchtitan.train --job.config_file FILE.toml` (its run_train.sh).
"""

from __future__ import annotations

from hps.config.frameworks import FRAMEWORK_FAMILIES
from hps.executor.export.common import Export, Layout, even_blocks, node_layout, quoted

SOURCE = "pytorch/torchtitan@v0.2.2 (73a0e6979dd10b6b1904098eb3c8f62c18ab87ce)"
FRAMEWORK = "torchtitan"
FAMILIES = FRAMEWORK_FAMILIES["torchtitan"]
FLAVORS = {"8B": (32, 4096, 32, 8, 14336), "70B": (80, 8192, 64, 8, 28672), "405B": (126, 16384, 128, 8, 53248)}
"""torchtitan's Llama 3 flavors: (n_layers, dim, n_heads, n_kv_heads, FFN width its
ffn_dim_multiplier and multiple_of give)."""


def flavor(layout: Layout) -> str:
    """The Llama 3 flavor of the layout's model; ConfigError for any other model."""
    shape = layout.shape
    sizes = (shape.layers, shape.hidden, shape.heads, shape.kv_heads, shape.ffn)
    for name, flavor_sizes in FLAVORS.items():
        if sizes == flavor_sizes and shape.gated_ffn and not shape.learned_positions and not shape.tied_embedding:
            return name
    problem = f"{FRAMEWORK}'s llama3 model has the flavors {', '.join(FLAVORS)}; {shape.name!r} is none of them"
    raise layout.refuse("workload", problem)


def model_parts(layout: Layout, chunks: list[int]) -> list[list[str]]:
    """module_fqns_per_model_part: the model's modules chunk by chunk, `chunks` blocks each,
    the embedding with the first, the final norm and output with the last."""
    parts, first = [], 0
    for count in chunks:
        parts.append([f"layers.{i}" for i in range(first, first + count)])
        first += count
    parts[0].insert(0, "tok_embeddings")
    parts[-1] += ["norm", "output"]
    return parts


def parallelism(layout: Layout) -> dict[str, object]:
    """The [parallelism] section. ZeRO 0: replicate (DDP); ZeRO 1 and 2: FSDP without
    resharding after the forward pass; ZeRO 3: FSDP resharding after it."""
    v = layout.virtual_stages
    section: dict[str, object] = {
        "data_parallel_replicate_degree": layout.dp if layout.zero == 0 else 1,
        "data_parallel_shard_degree": 1 if layout.zero == 0 else layout.dp,
    }
    if layout.zero:
        section["fsdp_reshard_after_forward"] = "always" if layout.zero == 3 else "never"
    section["tensor_parallel_degree"] = layout.tp
    section["pipeline_parallel_degree"] = layout.pp
    section["context_parallel_degree"] = 1
    if layout.pp > 1:
        if v > 1:
            per_chunk = even_blocks(layout, FRAMEWORK, v) // v
            chunks = [per_chunk] * (layout.pp * v)
        else:
            chunks = list(layout.blocks)
        section["pipeline_parallel_schedule"] = "Interleaved1F1B" if v > 1 else "1F1B"
        section["pipeline_parallel_microbatch_size"] = layout.micro_batch_per_replica
        section["module_fqns_per_model_part"] = model_parts(layout, chunks)
    elif v > 1:
        raise layout.refuse("stages", f"{v} virtual stages need at least 2 pipeline stages")
    return section


def torchtitan_sections(layout: Layout) -> dict[str, dict[str, object]]:
    """The TOML sections, each {key: value}."""
    if layout.precision == "fp32-sgd":
        raise layout.refuse("job.precision", f"{FRAMEWORK}'s optimizers are Adam and AdamW, not SGD")
    model: dict[str, object] = {"name": "llama3", "flavor": flavor(layout)}
    if layout.fp8:
        model["converters"] = ["quantize.linear.float8"]
    local = layout.batch // layout.dp if layout.pp > 1 else layout.micro_batch_per_replica
    return {
        "job": {"description": f"hps export: {layout.shape.name} on {layout.devices} {layout.resource.name}"},
        "model": model,
        "training": {
            "local_batch_size": local,
            "global_batch_size": layout.batch,
            "seq_len": layout.shape.seq_len,
            "steps": layout.steps,
        },
        "parallelism": parallelism(layout),
        "activation_checkpoint": activation_checkpoint(layout.recompute),
    }


def activation_checkpoint(recompute: str) -> dict[str, str]:
    """torchtitan's [activation_checkpoint] for the plan's recomputation: selective is its
    op-level policy (`selective_ac_option = "op"`, every second matmul of a block recomputed), as
    the zoo's `selective_alternate_matmuls` models it."""
    if recompute == "selective":
        return {"mode": "selective", "selective_ac_option": "op"}
    return {"mode": recompute}


def toml_text(sections: dict[str, dict[str, object]]) -> str:
    lines = []
    for name, keys in sections.items():
        lines += ["", f"[{name}]"] + [f"{key} = {quoted(value)}" for key, value in keys.items()]
    return "\n".join(lines).lstrip("\n") + "\n"


def export_torchtitan(layout: Layout) -> Export:
    sections = torchtitan_sections(layout)
    nodes, per_node = node_layout(layout)
    header = (
        f"# hps export --to torchtitan: {layout.shape.name}, {layout.devices} {layout.resource.name} = "
        f"t {layout.tp} x p {layout.pp} x d {layout.dp}\n# key names checked against {SOURCE}\n"
        f"# torchrun --nnodes {nodes} --nproc_per_node {per_node} ... -m torchtitan.train --job.config_file THIS.toml\n"
    )
    settings = {f"{name}.{key}": value for name, keys in sections.items() for key, value in keys.items()}
    return Export("torchtitan", header + toml_text(sections), settings, layout.devices, nodes, ".toml", SOURCE)
