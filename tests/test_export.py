"""`hps export` (docs/export.md): a uniform plan file as Megatron-LM flags, a MaxText config, a
torchtitan job config or a SkyPilot task; the flags meet the framework's own rules (checked here by
plain reference code written from Megatron-LM's arguments.py and transformer_config.py), the
published runs export to the layouts their sources published, and a plan a framework cannot run is
refused naming the file and the field."""

from __future__ import annotations

import dataclasses
import json
import shlex
import tomllib

import pytest

from hps.config.loaders import load_catalog
from hps.config.paths import resolve_topology
from hps.config.planfile import parse_plan_file, write_plan_file
from hps.config.types import Job, ParallelStage, PlanFile
from hps.errors import ConfigError
from hps.executor.export import ExportOptions, decoder_shape, export_plan
from hps.studies.published_runs import plan_json
from hps.studies.published_table import RUNS
from hps.workloads import build_workload
from tests.helpers import run_cli_output

CATALOG = load_catalog(resolve_topology("cloud-2026", "catalogs", "test"))


def split_plan(workload, blocks, types, tp, dp, micro_batch, batch, **job) -> PlanFile:
    """A plan whose stage j holds blocks[j] transformer blocks on types[j] (one type: every stage)
    at t = tp[j], d = dp[j] (ints: every stage); the embedding rides with the first stage, the head
    with the last."""
    rows, stages, first_block = 2 * sum(blocks) + 2, [], 0
    per_stage = lambda value, j: value[j] if isinstance(value, (list, tuple)) else value  # noqa: E731
    for j, count in enumerate(blocks):
        first = 0 if j == 0 else 1 + 2 * first_block
        first_block += count
        last = rows - 1 if j == len(blocks) - 1 else 2 * first_block
        stages.append(ParallelStage(first, last, per_stage(types, j), per_stage(tp, j), per_stage(dp, j)))
    fields = dict(precision="bf16-adam", zero=1, recompute="none") | job
    return PlanFile(workload, "cloud-2026", Job(batch, 1.0, 1e6, micro_batch=micro_batch, **fields), tuple(stages))


def export(plan: PlanFile, target: str, overrides: dict | None = None, source: str = "plan.json", **choices):
    """`plan` exported for `target`; `choices` (virtual_stages, fp8, launch) set on its job (launch:
    the SkyPilot option)."""
    launch = choices.pop("launch", "megatron")
    plan = dataclasses.replace(plan, job=dataclasses.replace(plan.job, **choices))
    workload = build_workload(plan.workload, **(overrides or {}))
    shape = decoder_shape(plan.workload, overrides)
    return export_plan(plan, workload, CATALOG, shape, target, source=source, options=ExportOptions(launch=launch))


def megatron_flags(text: str) -> dict[str, object]:
    """The flags after `pretrain_gpt.py`, parsed back: {flag: int, str or True}."""
    words = shlex.split(" ".join(line for line in text.splitlines() if not line.startswith("#")).replace("\\", ""))
    words, flags = words[words.index("pretrain_gpt.py") + 1 :], {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else True
            flags[word] = int(value) if isinstance(value, str) and value.isdigit() else value
    return flags


def megatron_reference_split(flags: dict, layers: int) -> list[int]:
    """Blocks per pipeline stage as Megatron-LM places them, from its rules: an even split of
    --num-layers (+1 for the embedding, +1 for the loss where --account-for-* counts them), or
    --decoder-first/last-pipeline-num-layers with the rest split evenly; with v virtual stages
    every stage's layers split into v chunks."""
    pp, v = flags["--pipeline-model-parallel-size"], flags.get("--num-virtual-stages-per-pipeline-rank", 1)
    first, last = flags.get("--decoder-first-pipeline-num-layers"), flags.get("--decoder-last-pipeline-num-layers")
    embedding = int("--account-for-embedding-in-pipeline-split" in flags)
    loss = int("--account-for-loss-in-pipeline-split" in flags)
    if first is None and last is None:
        assert (layers + embedding + loss) % pp == 0, "Number of layers should be divisible by the pipeline size"
        per = (layers + embedding + loss) // pp
        assert per % v == 0
        blocks = [per] * pp
        blocks[0] -= embedding
        blocks[-1] -= loss
        return blocks
    ends = [count for count in (first, last) if count is not None]
    middle_stages, middle_layers = pp - len(ends), layers - sum(ends)
    assert bool(middle_stages) == bool(middle_layers) and middle_layers % max(middle_stages, 1) == 0
    per = middle_layers // max(middle_stages, 1)
    assert all(count % v == 0 for count in [*ends, per])
    blocks = [per] * pp
    blocks[0] = first if first is not None else per
    blocks[-1] = last if last is not None else per
    return blocks


def plan_blocks(plan: PlanFile) -> list[int]:
    return [(s.last - s.first + 1 - (s.first == 0) - (s is plan.stages[-1])) // 2 for s in plan.stages]


ZOO_LLMS = {  # workload: (tp, blocks per stage, dp, micro_batch, batch), uniform on h100
    "gpt3-175b": (8, [12] * 8, 4, 8, 1536),
    "transformer-1t": (8, [2] * 64, 6, 6, 3072),
    "llama3-8b": (4, [8] * 4, 8, 16, 512),
    "llama3-70b": (8, [10] * 8, 4, 8, 2048),
    "llama3-405b": (8, [7] + [8] * 14 + [7], 8, 16, 2048),
    "llama2-70b": (8, [20] * 4, 8, 8, 1024),
    "gpt-mcore": (8, [16] * 6, 4, 4, 1152),
}


@pytest.mark.parametrize("workload", ZOO_LLMS)
def test_megatron_flags_of_every_zoo_llm_meet_megatrons_constraints(workload):
    tp, blocks, dp, micro_batch, batch = ZOO_LLMS[workload]
    plan = split_plan(workload, blocks, "h100", tp, dp, micro_batch, batch)
    result = export(plan, "megatron")
    flags = megatron_flags(result.text)
    pp, mbs, gbs = flags["--pipeline-model-parallel-size"], flags["--micro-batch-size"], flags["--global-batch-size"]
    assert (flags["--tensor-model-parallel-size"], pp, mbs, gbs) == (tp, len(blocks), micro_batch // dp, batch)
    assert flags["--tensor-model-parallel-size"] * pp * dp == result.devices == len(blocks) * tp * dp
    launcher = shlex.split(result.text.splitlines()[3].rstrip(" \\"))
    assert int(launcher[launcher.index("--nnodes") + 1]) * int(launcher[launcher.index("--nproc-per-node") + 1]) == (
        result.devices
    )
    assert gbs % (mbs * dp) == 0 and mbs * dp * (gbs // (mbs * dp)) == gbs  # whole micro-batches per replica
    assert flags["--num-layers"] == decoder_shape(workload).layers
    assert megatron_reference_split(flags, flags["--num-layers"]) == blocks == plan_blocks(plan)
    assert flags["--num-attention-heads"] % tp == 0 and flags.get("--num-query-groups", tp) % tp == 0


def test_megatron_uneven_ends_use_the_first_and_last_stage_flags():
    plan = split_plan("llama3-70b", [5, 10, 10, 10, 10, 10, 10, 15], "h100", 8, 4, 8, 2048)
    flags = megatron_flags(export(plan, "megatron").text)
    assert (flags["--decoder-first-pipeline-num-layers"], flags["--decoder-last-pipeline-num-layers"]) == (5, 15)
    assert megatron_reference_split(flags, 80) == plan_blocks(plan)


def test_megatron_interleaved_stages_and_recompute_and_zero3():
    plan = split_plan("gpt3-175b", [12] * 8, "h100", 8, 4, 8, 1536, recompute="full", zero=3)
    flags = megatron_flags(export(plan, "megatron", virtual_stages=3, fp8=True).text)
    assert flags["--num-virtual-stages-per-pipeline-rank"] == 3
    assert (flags["--recompute-granularity"], flags["--recompute-method"], flags["--recompute-num-layers"]) == (
        "full",
        "uniform",
        1,
    )
    assert flags["--use-megatron-fsdp"] is True and flags["--fp8-format"] == "hybrid"
    assert megatron_reference_split(flags, 96) == [12] * 8
    with pytest.raises(ConfigError, match="do not split into 5 virtual stages"):
        export(plan, "megatron", virtual_stages=5)


FRAMEWORK_OF = {"mcore": "megatron", "nemo": "megatron", "titan": "torchtitan", "maxtext": "maxtext"}
GOLDEN = [run for run in RUNS if run.key.split("-")[0] in FRAMEWORK_OF]


@pytest.mark.parametrize("run", GOLDEN, ids=[run.key for run in GOLDEN])
def test_published_runs_export_to_the_layout_their_sources_published(run):
    """Megatron-Core and NeMo (Megatron-Bridge sets the same Megatron-Core fields), torchtitan and
    MaxText runs of hps/studies/published_table.py: t, p, v, micro-batch and global batch."""
    workload = build_workload(run.workload, **run.overrides)
    plan = parse_plan_file(plan_json(run, len(workload.layers)), run.key)
    target = FRAMEWORK_OF[run.key.split("-")[0]]
    result = export(plan, target, run.overrides, run.key, virtual_stages=run.virtual_stages, fp8=run.compute == "fp8")
    assert result.devices == run.tp * run.pp * run.dp
    if target == "megatron":
        flags = megatron_flags(result.text)
        published = (run.tp, run.pp, run.virtual_stages, run.micro_batch, run.batch)
        assert published == (
            flags["--tensor-model-parallel-size"],
            flags["--pipeline-model-parallel-size"],
            flags.get("--num-virtual-stages-per-pipeline-rank", 1),
            flags["--micro-batch-size"],
            flags["--global-batch-size"],
        )
        assert ("--fp8-format" in flags) == (run.compute == "fp8")
        assert megatron_reference_split(flags, flags["--num-layers"]) == plan_blocks(plan)
    elif target == "torchtitan":
        config = tomllib.loads(result.text)
        parallel, training = config["parallelism"], config["training"]
        assert (parallel["tensor_parallel_degree"], parallel["pipeline_parallel_degree"]) == (run.tp, run.pp)
        assert parallel["data_parallel_shard_degree"] == run.dp  # FSDP: ZeRO 3
        assert (training["local_batch_size"], training["global_batch_size"]) == (run.micro_batch, run.batch)
        assert config["activation_checkpoint"]["mode"] == run.recompute
        assert config["activation_checkpoint"].get("selective_ac_option") == (
            "op" if run.recompute == "selective" else None
        )
        assert config["model"]["flavor"] == {"llama3-8b": "8B", "llama3-70b": "70B"}[run.workload]
    else:
        config = result.settings
        assert (config["ici_tensor_parallelism"], config["ici_pipeline_parallelism"]) == (run.tp, run.pp)
        assert config["ici_fsdp_parallelism"] * config["dcn_fsdp_parallelism"] == run.dp
        assert config["per_device_batch_size"] == run.micro_batch  # MaxText's per-device batch
        assert config["per_device_batch_size"] * result.devices * config["gradient_accumulation_steps"] == run.batch
        assert config["remat_policy"] == "full" and config["hardware"] == "tpu"


def test_every_target_writes_text_its_tool_parses():
    yaml = pytest.importorskip("yaml")
    plan = split_plan("llama3-70b", [20] * 4, "h100", 8, 4, 16, 2048)
    maxtext = yaml.safe_load(export(plan, "maxtext").text)
    assert maxtext["base_config"] == "base.yml" and maxtext["num_pipeline_microbatches"] == 128
    titan = tomllib.loads(export(plan, "torchtitan").text)
    parts = titan["parallelism"]["module_fqns_per_model_part"]
    assert [len(part) for part in parts] == [21, 20, 20, 22] and parts[0][0] == "tok_embeddings"
    task = yaml.safe_load(export(plan, "skypilot").text)
    assert task["num_nodes"] * 8 == 128 and task["resources"] == {"infra": "aws/us-east-1", "accelerators": "H100:8"}
    assert "$SKYPILOT_NODE_RANK" in task["run"] and "pretrain_gpt.py" in task["run"]
    titan_task = yaml.safe_load(export(plan, "skypilot", launch="torchtitan").text)
    assert "-m torchtitan.train --job.config_file hps.toml" in titan_task["run"]


def test_maxtext_keeps_t_inside_a_tpu_slice_and_spreads_d_across_slices():
    tpu = export(split_plan("llama3-70b", [20] * 4, "tpu-v6e", 4, 64, 64, 2048, zero=3), "maxtext")
    ici = {axis: tpu.settings[f"ici_{axis}_parallelism"] for axis in ("fsdp", "tensor", "pipeline")}
    dcn = {axis: tpu.settings[f"dcn_{axis}_parallelism"] for axis in ("fsdp", "tensor", "pipeline")}
    assert ici == {"fsdp": 16, "tensor": 4, "pipeline": 4} and dcn == {"fsdp": 4, "tensor": 1, "pipeline": 1}
    assert tpu.nodes == 4 and 16 * 4 * 4 == 256  # four v6e pods of 256 chips
    gpu = export(split_plan("llama3-70b", [20] * 4, "h100", 8, 4, 16, 2048), "maxtext").settings
    assert [gpu[f"ici_{axis}_parallelism"] for axis in ("data", "tensor", "pipeline")] == [4, 8, 4]
    assert all(gpu[f"dcn_{axis}_parallelism"] == 1 for axis in ("data", "fsdp", "tensor", "pipeline"))


REFUSALS = [
    ("mixed types", dict(types=["h100", "a100-80"]), "megatron", "stages[1].type", "one device type"),
    ("per-stage tp", dict(tp=[8, 4]), "torchtitan", "stages[1].tp", "one tp for every stage"),
    ("per-stage dp", dict(dp=[4, 8]), "maxtext", "stages[1].dp", "one dp for every stage"),
    ("TPU to Megatron", dict(types="tpu-v6e"), "megatron", "stages[0].type", "does not run 'tpu-v6e'"),
    ("Trainium to torchtitan", dict(types="trn2"), "torchtitan", "stages[0].type", "does not run 'trn2'"),
    ("TPU to SkyPilot", dict(types="tpu-v5p"), "skypilot", "stages[0].type", "does not run 'tpu-v5p'"),
]


@pytest.mark.parametrize("case, change, target, field, reason", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_plan_the_framework_cannot_run_is_refused_naming_file_and_field(
    tmp_path, case, change, target, field, reason
):
    layout = dict(types="h100", tp=8, dp=4) | change
    plan = split_plan("llama3-70b", [40, 40], layout["types"], layout["tp"], layout["dp"], 8, 2048)
    path = tmp_path / "plan.json"
    with pytest.raises(ConfigError, match=reason) as refused:
        export(plan, target, source=str(path))
    assert (refused.value.source, refused.value.field) == (str(path), field)


def test_splits_a_framework_cannot_express_are_refused():
    middle = split_plan("llama3-70b", [10, 20, 30, 20], "h100", 8, 4, 8, 2048)
    with pytest.raises(ConfigError, match="splits the stages between the first and the last evenly") as refused:
        export(middle, "megatron")
    assert refused.value.field == "stages[2].last"
    with pytest.raises(ConfigError, match="same blocks") as refused:
        export(split_plan("llama3-70b", [30, 50], "tpu-v6e", 4, 8, 8, 2048), "maxtext")
    assert refused.value.field == "stages[1].last"
    embedding_only = PlanFile("llama3-8b", "cloud-2026", split_plan("llama3-8b", [32], "h100", 8, 4, 8, 512).job, (
        ParallelStage(0, 0, "h100", 8, 4), ParallelStage(1, 65, "h100", 8, 4)))  # fmt: skip
    with pytest.raises(ConfigError, match="holds no transformer block") as refused:
        export(embedding_only, "megatron")
    assert refused.value.field == "stages[0]"


def test_cli_prints_and_writes_out_and_json(tmp_path, capsys):
    from hps.cli import export as command
    from hps.executor.export import TARGETS

    assert command.TARGETS == TARGETS  # the command's choices, kept without importing hps.executor.export
    path, out = tmp_path / "plan.json", tmp_path / "flags.sh"
    write_plan_file(split_plan("llama3-70b", [10] * 8, "h100", 8, 4, 8, 2048), path)
    code, printed, _ = run_cli_output(["export", str(path), "--to", "megatron", "--out", str(out)], capsys)
    assert code == 0 and printed == out.read_text() and "--tensor-model-parallel-size 8" in printed
    code, printed, _ = run_cli_output(["export", str(path), "--to", "torchtitan", "--json"], capsys)
    document = json.loads(printed)
    assert code == 0 and document["target"] == "torchtitan" and document["devices"] == 256
    assert document["settings"]["parallelism.pipeline_parallel_degree"] == 8


def test_cli_refusal_exits_2_with_one_line_and_no_traceback(tmp_path, capsys):
    path = tmp_path / "mixed.json"
    write_plan_file(split_plan("llama3-70b", [40, 40], ["h100", "b200"], 8, 4, 8, 2048), path)
    code, printed, error = run_cli_output(["export", str(path), "--to", "megatron"], capsys)
    assert code == 2 and printed == "" and "Traceback" not in error
    assert error.startswith(f"hps export: error: {path}: stages[1].type: Megatron-LM runs one device type")
    document = json.loads(path.read_text())
    document["job"]["virtual_stages"] = 0
    path.write_text(json.dumps(document))
    code, _, error = run_cli_output(["export", str(path), "--to", "megatron"], capsys)
    assert code == 2 and "job.virtual_stages" in error
