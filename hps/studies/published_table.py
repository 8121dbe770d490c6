"""Published training runs, as their sources state them: hardware, parallelism, batch, sequence,
precision and the throughput per device they measured. `hps.studies.published_runs` builds each
as a plan file and scores it.

Units: batches and micro-batches in sequences; `micro_batch` is per data-parallel replica (the
sources' MBS); `published` is TFLOP/s per device (`metric` "tflops") or tokens/s per device
("tokens"). `layers_per_stage` lists the transformer blocks of each pipeline stage where the run
did not cut them evenly (None: as even as the block count allows, earlier stages taking one more).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PublishedRun:
    """One published run. `workload` is a zoo name and `overrides` its hyperparameters; `type` the
    cloud-2026 type of the hardware; tp, pp, dp, cp its tensor, pipeline, data and context parallel
    degrees; `precision` the job's state precision (hps PRECISIONS) and `compute` the matmul
    precision the source states ("bf16" or "fp8"); `virtual_stages` the model chunks a device of an
    interleaved pipeline schedule (VP; 1 where none is stated); `zero`, `recompute` as a plan job has them;
    `published`/`metric` the figure; `mfu` the source's MFU where it gives one; `assumed` what the
    source does not state and the plan assumes; `catalog` the catalogue that has `type`."""

    key: str
    label: str
    workload: str
    type: str
    tp: int
    pp: int
    dp: int
    micro_batch: int
    batch: int
    seq_len: int
    precision: str
    compute: str
    zero: int
    recompute: str
    published: float
    metric: str
    source: str
    url: str
    date: str
    mfu: float | None = None
    cp: int = 1
    overrides: dict = field(default_factory=dict)
    layers_per_stage: tuple[int, ...] | None = None
    virtual_stages: int = 1
    assumed: str = ""
    catalog: str = "cloud-2026"


MCORE_URL = "https://github.com/NVIDIA/Megatron-LM/blob/f2e5db402c/images/model_table.png"
MCORE_SOURCE = "Megatron-LM README, weak-scaling table (Megatron-Core r0.8.0)"
MCORE_ASSUMED = (
    "micro-batch 1 (not stated); ZeRO 1 (--overlap-param-gather needs the distributed optimizer); no recomputation"
)


def _mcore(key, layers, hidden, heads, tp, pp, gpus, batch, tflops, mfu) -> PublishedRun:
    return PublishedRun(
        key=key, label=f"GPT {key.split('-')[1].upper()}, {gpus:,} H100 (Megatron-Core)", workload="gpt-mcore",
        type="h100", tp=tp, pp=pp, dp=gpus // (tp * pp), micro_batch=1, batch=batch, seq_len=4096,
        precision="bf16-adam", compute="bf16", zero=1, recompute="none", published=tflops, metric="tflops",
        source=MCORE_SOURCE, url=MCORE_URL, date="2024-07-15", mfu=mfu,
        overrides=dict(layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn=4 * hidden),
        assumed=MCORE_ASSUMED,
    )  # fmt: skip


NEMO_URL = "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/main/docs/performance-summary-archive.md"
TITAN_URL = "https://github.com/pytorch/torchtitan/blob/main/docs/performance.md"
NEURON_URL = (
    "https://github.com/aws-neuron/aws-neuron-sdk/blob/master/about-neuron/benchmarks/trn1/training_data_decoder.csv"
)
MAXTEXT_URL = "https://github.com/AI-Hypercomputer/maxtext/blob/main/docs/reference/models/tiering.md"
SC21_URL = "https://arxiv.org/abs/2104.04473"
SC21_SOURCE = (
    "Narayanan et al., Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM (SC21), "
    "Table 1 (A100-80GB, Selene); t, micro-batch and --checkpoint-activations from Megatron-LM "
    "examples/sc21/run_table_1.sh (de7dc40f88)"
)
SC21_ASSUMED = (
    "tokens/s = the table's TFLOP/s per GPU over the paper's Eq. 3, 96·l·h²·(1 + s/6h + V/16lh) FLOPs a token "
    "(it counts the recomputed forward pass); fp16 with fp32 master weights taken as bf16-adam; torch DDP, so "
    "ZeRO 0; GELU FFN 4h, vocabulary 51,200, tied embedding (the zoo's GPT-3 design); standard attention, no "
    "FlashAttention (2021)"
)
KORTHIKANTI_URL = "https://arxiv.org/abs/2205.05198"
KORTHIKANTI_ASSUMED = (
    "tokens/s = global batch x 2,048 / (Table 5's iteration time x GPUs); fp16/bf16 mixed precision taken as "
    "bf16-adam; no data parallelism, so ZeRO 0; GELU FFN 4h, tied embedding (the zoo's GPT-3 design); standard "
    "attention, no FlashAttention (2022), whose S^2 softmax and dropout activations selective recomputation drops"
)
NEMO_DOCS_URL = "https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/performance_summary.html"
NEMO_2504_URL = (
    "https://docs.nvidia.com/nemo-framework/user-guide/latest/performance/archive/25.04-performance-summary.html"
)
NEMO_2407_URL = "https://github.com/NVIDIA/NeMo/blob/8e3d65dcfe/docs/source/performance/performance_summary.md"
NEMO_ASSUMED = "distributed optimizer (ZeRO 1); no recomputation"


def _gpt(layers: int, hidden: int, heads: int) -> dict:
    """A GPT-3-style shape of the Megatron papers: multi-head attention, FFN 4h, vocabulary 51,200,
    and standard attention (flash_attention=False: the 2021-2022 Megatron-LM of these papers
    predates FlashAttention and puts the S x S scores, softmax and dropout through memory)."""
    return dict(
        layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn=4 * hidden, vocab=51_200, flash_attention=False
    )


def _sc21(size, layers, hidden, heads, tp, gpus, micro_batch, batch, tflops) -> PublishedRun:
    """A row of the SC21 paper's Table 1 (weak scaling, full activation recomputation, s = 2048)."""
    per_token = 96 * layers * hidden**2 * (1 + 2048 / (6 * hidden) + 51_200 / (16 * layers * hidden))
    return PublishedRun(
        key=f"sc21-{size.lower()}", label=f"GPT {size}, {gpus} A100 (Megatron-LM, SC21)", workload="gpt3-175b",
        type="a100-80", tp=tp, pp=1, dp=gpus // tp, micro_batch=micro_batch, batch=batch, seq_len=2048,
        precision="bf16-adam", compute="bf16", zero=0, recompute="full", published=tflops * 1e12 / per_token,
        metric="tokens", source=f"{SC21_SOURCE}: {tflops} TFLOP/s per GPU", url=SC21_URL, date="2021-04-09",
        overrides=_gpt(layers, hidden, heads), assumed=SC21_ASSUMED,
    )  # fmt: skip


RUNS: tuple[PublishedRun, ...] = (
    _mcore("mcore-1.7b", 24, 2048, 16, 1, 1, 48, 192, 408.8, 0.41),
    _mcore("mcore-7.1b", 30, 4096, 32, 2, 1, 96, 192, 465.9, 0.47),
    _mcore("mcore-16b", 32, 6144, 48, 4, 1, 192, 192, 489.1, 0.49),
    _mcore("mcore-32b", 48, 7168, 56, 8, 1, 384, 192, 459.6, 0.46),
    _mcore("mcore-70b", 84, 8192, 64, 8, 2, 768, 384, 419.7, 0.42),
    _mcore("mcore-119b", 92, 10240, 80, 8, 4, 1536, 768, 420.5, 0.43),
    _mcore("mcore-177b", 96, 12288, 96, 8, 6, 2304, 1152, 432.8, 0.44),
    _mcore("mcore-314b", 96, 16384, 128, 8, 8, 3072, 1536, 474.4, 0.48),
    _mcore("mcore-462b", 112, 18432, 144, 8, 16, 6144, 3072, 459.9, 0.47),
    PublishedRun(
        key="meta-405b", label="Llama 3 405B, 8,192 H100 (Meta)", workload="llama3-405b", type="h100",
        tp=8, pp=16, dp=64, micro_batch=1, batch=2048, seq_len=8192, precision="bf16-adam", compute="bf16",
        zero=2, recompute="none", published=430.0, metric="tflops", mfu=0.43,
        source="Dubey et al., The Llama 3 Herd of Models, Table 4 (8,192 GPUs, TP 8, CP 1, PP 16, DP 64)",
        url="https://arxiv.org/abs/2407.21783", date="2024-07-23",
        layers_per_stage=(7,) + (8,) * 14 + (7,),
        assumed="micro-batch 1 (32 sequences a data-parallel group, Table 4); one layer fewer on the first and "
        "last stages (Sec. 3.3.2); ZeRO 2 (the paper's FSDP shards optimizer state and gradients, Sec. 3.3.2)",
    ),
    PublishedRun(
        key="titan-8b", label="Llama 3 8B, 64 A100 (torchtitan, FSDP)", workload="llama3-8b", type="a100-80",
        tp=1, pp=1, dp=64, micro_batch=1, batch=64, seq_len=8192, precision="fp32-adam", compute="bf16",
        zero=3, recompute="selective", published=2973.0, metric="tokens", mfu=0.582,
        source="torchtitan docs/performance.md, Llama 3 table (FSDP2, selective op activation checkpointing)",
        url=TITAN_URL, date="2024-04-24", overrides=dict(selective_alternate_matmuls=True),
        assumed="selective op checkpointing as torchtitan's policy recomputes (every second matmul of a block "
        "and its non-matmul ops: torchtitan/distributed/activation_checkpoint.py); fp32 master state (FSDP2 "
        "mixed precision)",
    ),
    PublishedRun(
        key="titan-70b", label="Llama 3 70B, 64 A100 (torchtitan, FSDP)", workload="llama3-70b", type="a100-80",
        tp=1, pp=1, dp=64, micro_batch=1, batch=64, seq_len=8192, precision="fp32-adam", compute="bf16",
        zero=3, recompute="full", published=331.0, metric="tokens", mfu=0.517,
        source="torchtitan docs/performance.md, Llama 3 table (FSDP2, full activation checkpointing)",
        url=TITAN_URL, date="2024-04-24", assumed="fp32 master state (FSDP2 mixed precision)",
    ),
    PublishedRun(
        key="maxtext-v5p-l2-70b", label="Llama 2 70B, 512 TPU v5p (MaxText)", workload="llama2-70b",
        type="tpu-v5p", tp=1, pp=1, dp=512, micro_batch=4, batch=2048, seq_len=4096, precision="fp32-adam",
        compute="bf16", zero=3, recompute="full", published=692.0, metric="tokens", mfu=0.654,
        source="MaxText docs/reference/models/tiering.md, v5p Gold (recipe llama2_70b_v5p_128: FSDP, "
        "per-device batch 4, remat save_dot_except_mlpwi)",
        url=MAXTEXT_URL, date="2026-06-15",
        assumed="remat save_dot_except_mlpwi taken as full recomputation; fp32 weights (MaxText's default)",
    ),
    PublishedRun(
        key="maxtext-v6e-l2-70b", label="Llama 2 70B, 256 TPU v6e (MaxText)", workload="llama2-70b",
        type="tpu-v6e", tp=1, pp=1, dp=256, micro_batch=4, batch=1024, seq_len=4096, precision="fp32-adam",
        compute="bf16", zero=3, recompute="full", published=900.0, metric="tokens", mfu=0.438,
        source="MaxText docs/reference/models/tiering.md, Trillium Gold (recipe llama2-70b-4096: FSDP 256, "
        "per-device batch 4, remat full)",
        url=MAXTEXT_URL, date="2026-06-15", assumed="fp32 weights (MaxText's default)",
    ),
    PublishedRun(
        key="nemo-h100-70b", label="Llama 3 70B, 64 H100, FP8 (NeMo)", workload="llama3-70b", type="h100",
        tp=4, pp=8, dp=2, micro_batch=1, batch=256, seq_len=8192, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=1621.0, metric="tokens",
        source="Megatron-Bridge performance summary, 26.02 container, LLAMA3_70B on DGX-H100 (FP8, TP 4, PP 8, "
        "VP 5)",
        url=NEMO_URL, date="2026-02", virtual_stages=5, assumed="distributed optimizer (ZeRO 1); no recomputation",
    ),
    PublishedRun(
        key="nemo-b200-8b", label="Llama 3 8B, 8 B200, FP8 (NeMo)", workload="llama3-8b", type="b200",
        tp=1, pp=1, dp=8, micro_batch=2, batch=128, seq_len=8192, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=30624.0, metric="tokens",
        source="Megatron-Bridge performance summary, 25.11 container, LLAMA3_8B on DGX-B200 (FP8-CS)",
        url=NEMO_URL, date="2025-11", assumed="distributed optimizer (ZeRO 1); no recomputation",
    ),
    PublishedRun(
        key="nemo-gb200-405b", label="Llama 3.1 405B, 256 GB200, FP8 (NeMo)", workload="llama3-405b",
        type="gb200", tp=4, pp=16, dp=4, micro_batch=1, batch=1536, seq_len=8192, precision="bf16-adam",
        compute="fp8", zero=1, recompute="none", published=793.0, metric="tokens",
        source="Megatron-Bridge performance summary, 26.02 container, LLAMA3.1_405B on DGX-GB200 (FP8, TP 4, "
        "PP 16, VP 4)",
        url=NEMO_URL, date="2026-02", virtual_stages=4, layers_per_stage=(7,) + (8,) * 14 + (7,),
        assumed="distributed optimizer (ZeRO 1); no recomputation; the embedding and the loss each count as a "
        "layer in the pipeline split (Megatron-Core's account_for_embedding/loss_in_pipeline_split): 126 + 2 = "
        "128 = 16 x 8, one block fewer on the first and last stages. Not in the plan: the recipe (Megatron-Bridge "
        "v0.3.0 LLAMA31_405B_PRETRAIN_CONFIG_GB200_FP8_CS_V2: no recompute, no CPU offloading, no CUDA-graph "
        "setting, microbatch_group_size_per_vp_stage left at PP) trains with fp8_param_gather (FP8 primary "
        "weights, bf16_with_fp8_current_scaling_mixed) and Megatron-Core's fused SwiGLU "
        "(bias_activation_fusion), which keeps its input and recomputes swish(gate) in the backward pass",
    ),
    PublishedRun(
        key="neuron-trn1-8b", label="Llama 3.1 8B, 512 Trainium (NxD, trn1n.32xlarge)", workload="llama3-8b",
        type="trn1", tp=16, pp=1, dp=32, micro_batch=1, batch=1024, seq_len=8192, precision="fp32-adam",
        compute="bf16", zero=1, recompute="none", published=47.95 * 8192 / 512, metric="tokens",
        source="AWS Neuron docs, Trn1/Trn1n training performance, decoder models (Neuron 2.24: 32 nodes, TP=32 "
        "DP=32 PP=1 ZeRO-1 over NeuronCores, 47.95 seq/s at 8,192 tokens)",
        url=NEURON_URL, date="2026-02-19", catalog="trainium-2022",
        assumed="TP 32 NeuronCores = 16 chips (2 cores a chip); autocast BF16 with an FP32 optimizer taken as "
        "fp32 state; selective checkpointing taken as no recomputation",
    ),
    PublishedRun(
        key="neuron-trn1-70b", label="Llama 3.1 70B, 512 Trainium (NxD, trn1n.32xlarge)", workload="llama3-70b",
        type="trn1", tp=16, pp=8, dp=4, micro_batch=1, batch=1024, seq_len=8192, precision="fp32-adam",
        compute="bf16", zero=1, recompute="none", published=7.94 * 8192 / 512, metric="tokens",
        source="AWS Neuron docs, Trn1/Trn1n training performance, decoder models (Neuron 2.24: 32 nodes, TP=32 "
        "DP=4 PP=8 over NeuronCores, 7.94 seq/s at 8,192 tokens)",
        url=NEURON_URL, date="2026-02-19", catalog="trainium-2022",
        assumed="TP 32 NeuronCores = 16 chips; ZeRO 1, selective checkpointing (taken as no recomputation) and "
        "one sample a micro-batch, as the NxD tp_pp script run_llama_70b_tp_pp.sh sets them; fp32 state",
    ),
    _sc21("1.7B", 24, 2304, 24, 1, 32, 16, 512, 137),
    _sc21("3.6B", 30, 3072, 32, 2, 64, 16, 512, 138),
    _sc21("7.5B", 36, 4096, 32, 4, 128, 16, 512, 142),
    _sc21("18B", 40, 6144, 48, 8, 256, 8, 1024, 135),
    PublishedRun(
        key="korthikanti-22b", label="GPT 22B, 8 A100, selective recomputation (Megatron-LM)", workload="gpt3-175b",
        type="a100-80", tp=8, pp=1, dp=1, micro_batch=4, batch=4, seq_len=2048, precision="bf16-adam",
        compute="bf16", zero=0, recompute="selective", published=4 * 2048 / (1.10 * 8), metric="tokens", mfu=0.415,
        source="Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models (MLSys 2023), "
        "Tables 3 and 5 (TP 8, global and micro-batch 4, sequence parallelism + selective recomputation: 1.10 s "
        "an iteration, MFU 41.5 %, HFU 43.7 %)",
        url=KORTHIKANTI_URL, date="2022-05-10", overrides=_gpt(48, 6144, 64), assumed=KORTHIKANTI_ASSUMED,
    ),
    PublishedRun(
        key="korthikanti-175b", label="GPT-3 175B, 64 A100, selective recomputation (Megatron-LM)",
        workload="gpt3-175b", type="a100-80", tp=8, pp=8, dp=1, micro_batch=1, batch=64, seq_len=2048,
        precision="bf16-adam", compute="bf16", zero=0, recompute="selective", published=64 * 2048 / (13.75 * 64),
        metric="tokens", mfu=0.514, virtual_stages=3,
        source="Korthikanti et al., Reducing Activation Recomputation in Large Transformer Models (MLSys 2023), "
        "Tables 3 and 5 (TP 8, PP 8, interleaved schedule of 3 stages a device, global batch 64, micro-batch 1, "
        "sequence parallelism + selective recomputation: 13.75 s an iteration, MFU 51.4 %, HFU 52.8 %)",
        url=KORTHIKANTI_URL, date="2022-05-10", overrides=_gpt(96, 12288, 96), assumed=KORTHIKANTI_ASSUMED,
    ),
    PublishedRun(
        key="nemo-gb200-8b", label="Llama 3 8B, 8 GB200, FP8 (NeMo)", workload="llama3-8b", type="gb200",
        tp=1, pp=1, dp=8, micro_batch=2, batch=128, seq_len=8192, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=31508.0, metric="tokens",
        source="Megatron-Bridge performance summary, 25.11 container, LLAMA3_8B on DGX-GB200 (FP8-CS, TP 1, PP 1, "
        "FSDP 0: 31,508 tokens/s/GPU)",
        url=NEMO_URL, date="2025-11",
        assumed="distributed optimizer (ZeRO 1); no recomputation (the recipe llama3_8b_pretrain_8gpu_gb200_fp8cs "
        "sets none)",
    ),
    PublishedRun(
        key="nemo-gb200-gpt3", label="GPT-3 175B, 128 GB200, FP8 (NeMo)", workload="gpt3-175b", type="gb200",
        tp=4, pp=4, dp=8, micro_batch=2, batch=256, seq_len=2048, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=1804.0, metric="tokens", virtual_stages=12,
        source="NeMo Framework performance summary, NeMo 25.04 container, GPT3-175B on DGX-GB200 (FP8, TP 4, PP 4, "
        "VP 12, GA 16: 1,804 tokens/s/GPU)",
        url=NEMO_2504_URL, date="2025-04", assumed=f"{NEMO_ASSUMED}; the zoo's GPT-3 (vocabulary 50,257, tied)",
    ),
    PublishedRun(
        key="nemo-b200-gpt3", label="GPT-3 175B, 512 B200, FP8 (NeMo)", workload="gpt3-175b", type="b200",
        tp=4, pp=4, dp=32, micro_batch=2, batch=2048, seq_len=2048, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=1600.0, metric="tokens", virtual_stages=6,
        source="NeMo Framework performance summary, NeMo 25.02 container, GPT3-175B on DGX-B200 (FP8, TP 4, PP 4, "
        "VP 6, GA 32: 1,600 tokens/s/GPU)",
        url=NEMO_DOCS_URL, date="2025-02", assumed=f"{NEMO_ASSUMED}; the zoo's GPT-3 (vocabulary 50,257, tied)",
    ),
    PublishedRun(
        key="nemo-h100-l2-70b", label="Llama 2 70B, 64 H100, FP8 (NeMo)", workload="llama2-70b", type="h100",
        tp=4, pp=4, dp=4, micro_batch=1, batch=128, seq_len=4096, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=1728.0, metric="tokens", virtual_stages=20,
        source="NeMo performance summary, NeMo 24.07 container, LLAMA2-70B on DGX-H100 (FP8, TP 4, PP 4, VP 20: "
        "1,728 tokens/s/GPU)",
        url=NEMO_2407_URL, date="2024-09", assumed=NEMO_ASSUMED,
    ),
    PublishedRun(
        key="nemo-h100-gpt3", label="GPT-3 175B, 128 H100, FP8 (NeMo)", workload="gpt3-175b", type="h100",
        tp=4, pp=8, dp=4, micro_batch=1, batch=256, seq_len=2048, precision="bf16-adam", compute="fp8",
        zero=1, recompute="none", published=716.0, metric="tokens", virtual_stages=6,
        source="NeMo performance summary, NeMo 24.07 container, GPT3-175B on DGX-H100 (FP8, TP 4, PP 8, VP 6: "
        "716 tokens/s/GPU)",
        url=NEMO_2407_URL, date="2024-09", assumed=f"{NEMO_ASSUMED}; the zoo's GPT-3 (vocabulary 50,257, tied)",
    ),
)  # fmt: skip
"""The runs. Left out: torchtitan's Llama 3.1 405B on 512 H100 (its docs/performance.md, Table 5:
128 tokens/s a GPU, FSDP 8, TP 8, PP 8, Float8, interleaved 1F1B) ran on Grand Teton H100s (96 GB
HBM2e at 2.4 TB/s, power-capped at 500 W), which no catalogue type describes, and does not state
its pipeline micro-batches (scored on cloud-2026's h100 with 4 samples a micro-batch, 2 chunks a
device and FP8, the model predicts 1.41 of it: docs/prediction-trust.md); context-parallel runs
(a plan has no context parallelism), runs on more
units than a cloud-2026 type's cap (Llama 3 405B on 16,384 H100), runs whose activations the
sources offload to host memory (MaxText's Llama 3.1 recipes on v6e; NeMo's Llama 3 70B FSDP runs on
GB200, whose recipe llama3_70b_pretrain_64gpu_gb200_fp8cs offloads 40 layers' activations), runs
that recompute some blocks only (NeMo's Llama 3 8B on H100: full recomputation of 5 blocks), the
SC21 Table 1 rows from 39B up and Korthikanti et al.'s 530B and 1T (more than a100-80's 256
units), and Trainium2 runs (no
published Trainium2 training throughput with its layout was found; the Trainium runs are
first-generation trn1, on the trainium-2022 catalogue)."""
