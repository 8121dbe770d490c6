"""Decoder-only language models at published sizes: GPT-3 175B, Llama 3 70B and 405B, and the
1-trillion-parameter transformer of Megatron-LM that the Themis evaluation trains.

A sample is one training sequence of `seq_len` tokens. Rows: the input embedding, one attention
row and one FFN row per layer, and the LM head (final norm, output projection over the
vocabulary, next-token loss at every position). These models do not fit one device: their default
jobs pipeline them over many stages (finite micro-batches) and let the planner shard parameter and
optimizer state. They are planning workloads; the zoo has no Flax model of them to execute.

The tables describe training as these runs do it (docs/llm-tables.md has every formula and its
source): 16-bit activations (p = 2 bytes a value; parameters still count 4 bytes in
dense_param_bytes, the job's precision weighs them), attention as FlashAttention computes it (no
S x S matrix through memory), per-sample `stash_bytes` from Korthikanti et al. (MLSys 2023) Eq. 1
without its attention-score term (S·H·34 bytes a block for GPT-3), Megatron-LM tensor-parallel
All-Reduces (2·S·H·p per half block, two collectives each), and a block as one pipeline unit
(`cut_after` False on its attention row). Job defaults: `bf16-adam`, ZeRO 1, no recomputation, and
the micro-batch of the cited run where it is published.
"""

from __future__ import annotations

import dataclasses

from hps.config.types import JobDefaults, Layer
from hps.errors import ConfigError
from hps.workloads.entry import ZooEntry, architecture, parameter_count
from hps.workloads.layers import BF16_BYTES, ID_BYTES
from hps.workloads.nlp import TransformerShape
from hps.workloads.transformer_layers import Numerics, input_embedding, lm_head

MEGATRON_NUMERICS = Numerics(BF16_BYTES, flash=True, dropout=True)
"""GPT-3 and Transformer-1T as Megatron-LM trains them today: 16-bit activations (its GPT-3 175B
script trains in fp16, two bytes as bf16), attention as FlashAttention computes it (the script's
`--attention-backend auto` picks a fused flash-style kernel; the 2021 and 2022 runs predate it:
`flash_attention=False` builds them), and Megatron-LM's default dropout, hidden 0.1 and attention 0.1
(megatron/training/arguments.py), which the cited scripts keep; FlashAttention regenerates the
attention-probability mask, so only the two hidden-dropout masks of a block are kept."""
LLAMA_NUMERICS = Numerics(BF16_BYTES, flash=True, dropout=False)
"""Llama 3: bf16 activations, FlashAttention, no dropout (assumed: the paper names none and Meta's
reference model code has no dropout layers)."""


@architecture(
    "Decoder LM, {parameters} parameters: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, "
    "sequence {seq_len}, vocabulary {vocab}; {kv_heads} KV heads, {ffn_kind} FFN, {head} LM head"
)
class DecoderLM(TransformerShape):
    """A decoder-only transformer LM. Beyond the `TransformerShape` sizes: `kv_heads` key/value
    heads (equal to `heads`: multi-head attention), and three design flags whose defaults are the
    GPT-2/GPT-3 design, which `Llama3` changes: `gated_ffn` (SwiGLU instead of GELU),
    `tied_embedding` (the LM head projects with the word-embedding matrix), `learned_positions` (a
    position table of seq_len rows; False: rotary positions, no table); and `flash_attention`
    (default True; False: standard attention, the S x S scores, softmax and dropout through memory
    and kept for the backward pass, as Megatron-LM ran before FlashAttention, e.g. the SC21 and
    Korthikanti et al. 2022 runs; its attention rows carry `selective_stash_bytes` and
    `selective_flops` for selective recomputation). `selective_alternate_matmuls` (default False;
    needs FlashAttention and the SwiGLU FFN) makes selective recomputation torchtitan's op-level
    policy: every second matmul of a block and its non-matmul ops recomputed
    (`hps.workloads.transformer_layers.Numerics.alternate_matmuls`).

    Per layer: attention with `kv_heads` K/V heads (grouped-query when fewer than `heads`), then the
    FFN. The input embedding reads seq_len + 1 token ids per sample (the last one is only a label)
    and has no LayerNorm of its own. Every layer counts the biases and two-parameter LayerNorms of
    `hps.workloads.transformer_layers.attention_block`; for bias-free, RMSNorm models (Llama) that
    adds under 1e-4 of the parameters.

    Numbers per sample (S = seq_len, H = hidden, a = heads, Hkv = kv_heads·H/a, F = ffn, V = vocab,
    p = 2 bytes a value; `hps.workloads.transformer_layers` states each formula):

    - embedding: act p S H, stash [dropout] S H (its mask), tp p S H in one All-Reduce (forward).
    - attention: mem p (25 S H + 10 S Hkv) (FlashAttention: no S^2 term), act p S H, stash
      p S (4 H + 2 Hkv) + [dropout] S H, tp 2 p S H in 2 All-Reduces, cut_after False.
    - FFN: mem 3 p (5 S H + 4 S F) (SwiGLU 6 S F), act p S H, stash 2 p S H + 2 p S F (SwiGLU
      3 p S F) + [dropout] S H, tp 2 p S H in 2 All-Reduces.
    - head: act 4 (the loss), stash 2 p S H + 4 S V (fp32 logits), tp p S H + 12 S in 4 All-Reduces.

    `numerics` (a class attribute) is `MEGATRON_NUMERICS`; `Llama3` has `LLAMA_NUMERICS`.
    """

    kv_heads: int
    gated_ffn: bool = False
    tied_embedding: bool = True
    learned_positions: bool = True
    flash_attention: bool = True
    selective_alternate_matmuls: bool = False
    numerics = MEGATRON_NUMERICS

    def layer_numerics(self) -> Numerics:
        """The family's `numerics`, with FlashAttention and the selective policy as
        `flash_attention` and `selective_alternate_matmuls` set them."""
        return dataclasses.replace(
            self.numerics, flash=self.flash_attention, alternate_matmuls=self.selective_alternate_matmuls
        )

    def check(self, entry: str) -> None:
        super().check(entry)
        if self.heads % self.kv_heads:
            raise ConfigError("workload", f"{entry}.kv_heads", f"must divide heads ({self.heads}), got {self.kv_heads}")
        if self.selective_alternate_matmuls and not (self.flash_attention and self.gated_ffn):
            raise ConfigError(
                "workload",
                f"{entry}.selective_alternate_matmuls",
                "torchtitan's op-level selective policy is modelled for FlashAttention with a SwiGLU FFN only",
            )

    def row_count(self) -> int:
        return 2 * self.layers + 2  # embedding, the layers' rows, LM head

    def table(self) -> tuple[Layer, ...]:
        tables = (self.vocab, self.seq_len) if self.learned_positions else (self.vocab,)
        numerics = self.layer_numerics()
        embedding = input_embedding(
            "embedding",
            self.seq_len,
            self.hidden,
            tables,
            numerics,
            ids_per_token=1,
            layer_norm=False,
            label_bytes=ID_BYTES,
        )
        head = lm_head("head", self.seq_len, self.hidden, self.vocab, self.tied_embedding, numerics)
        return (embedding, *self.blocks(self.kv_heads, self.gated_ffn), head)

    def derived(self, layers: tuple[Layer, ...]) -> dict[str, object]:
        return {
            "parameters": parameter_count(layers),
            "ffn_kind": "SwiGLU" if self.gated_ffn else "GELU",
            "head": "tied" if self.tied_embedding else "untied",
        }


@architecture()
class Llama3(DecoderLM):
    """The Llama 3 design (Dubey et al., "The Llama 3 Herd of Models", 2024, Table 3): grouped-query
    attention with 8 KV heads, SwiGLU FFN, rotary positions, an untied output head, a 128,256-token
    vocabulary (128K in Table 3: 100K tiktoken tokens + 28K), and 8,192-token pre-training sequences.
    Numerics `LLAMA_NUMERICS` (no dropout: the SwiGLU FFN keeps 2 p S H + 3 p S F, the attention
    p S (4 H + 2 Hkv), no masks)."""

    numerics = LLAMA_NUMERICS
    kv_heads: int = 8
    seq_len: int = 8192
    vocab: int = 128_256
    gated_ffn: bool = True
    tied_embedding: bool = False
    learned_positions: bool = False


def _parallel_job(**fields: object) -> JobDefaults:
    """A job of the published runs: `bf16-adam` mixed precision (bf16 parameters and gradients, an
    fp32 master copy and two fp32 Adam moments: 2 + 2 + 12 bytes a parameter), ZeRO 1 (the
    optimizer state sharded across a stage's data-parallel replicas), no activation recomputation
    (FlashAttention already drops the S x S activations that selective recomputation targets), and
    the planner's sharding of state allowed ("auto") for the schedule model."""
    return JobDefaults(state_sharding="auto", precision="bf16-adam", zero=1, recompute="none", **fields)


gpt3_175b = ZooEntry(
    "gpt3-175b",
    DecoderLM(layers=96, hidden=12288, heads=96, kv_heads=96, ffn=4 * 12288, seq_len=2048, vocab=50257),
    _parallel_job(batch=1536.0, throughput=60.0, samples=300e9 / 2048, micro_batches=128.0, micro_batch=12.0),
)
"""GPT-3 175B (Brown et al., "Language Models are Few-Shot Learners", 2020, Table 2.1): 96 layers,
d_model 12288, 96 heads of 128, FFN 4 x 12288, 2048-token context, the GPT-2 BPE vocabulary of
50,257 tokens; 174.6 B parameters here (175 B published). 194 rows.

Per block and sample (S = 2048, H = 12288, p = 2, dropout as Megatron-LM): stash 13 S H
(attention) + 21 S H (FFN) = 34 S H bytes, Korthikanti et al. Eq. 1 without its 5 a S / H term
(FlashAttention); tensor-parallel traffic 2 x 2 S H p = 8 S H bytes in four All-Reduces (Shoeybi et
al. 2019, Sec. 3); attention traffic 35 S H p (no S^2 term).

Job: 300 B training tokens (the paper's run) = 1.46e8 sequences; batch 1536 sequences (3.1 M
tokens; the paper's 3.2 M, and Megatron-LM's 175 B configuration); a floor of 60 sequences/s trains
it in 28 days. Megatron-LM's 175 B script (examples/gpt3/train_gpt3_175b_distributed.sh) fixes
micro-batch 1 per replica, global batch 1536, tensor 8 x pipeline 16, but not the GPU count; at
1536 GPUs (one sequence per GPU and iteration) that is 12 data-parallel replicas: micro_batch 12
(12 x 1 sequence) and 128 micro-batches per iteration, as `micro_batches`. (Narayanan et al. 2021,
Sec. 5.1, estimate this model's training time on 1024 GPUs: 8 replicas, micro_batch 8.) Precision
`bf16-adam` (the script's fp16 weighs the same); ZeRO 1 is Megatron-LM's distributed optimizer
(`--use-distributed-optimizer`: the fp32 master weights and Adam moments sharded across
data-parallel ranks, at the communication volume of an All-Reduce; the script leaves it off); no
recomputation. State sharding "auto": no stage fits a device with replicated Adam state."""

llama3_70b = ZooEntry(
    "llama3-70b",
    Llama3(layers=80, hidden=8192, heads=64, ffn=28672),
    _parallel_job(batch=2048.0, throughput=700.0, samples=15e12 / 8192, micro_batches=16.0),
)
"""Llama 3 70B (Dubey et al. 2024, Table 3): 80 layers, model dimension 8192, 64 heads, 8 KV heads,
FFN 28672 (SwiGLU), vocabulary 128,256, 8,192-token sequences; 70.6 B parameters. 162 rows.

Per block and sample (S = 8192, H = 8192, Hkv = 1024, F = 28672, p = 2, no dropout): stash
p S (4 H + 2 Hkv) = 8.5 S H (attention) + 2 p S H + 3 p S F = 25 S H (FFN); tensor-parallel
traffic 8 S H bytes in four All-Reduces.

Job: the paper's pre-training recipe, 15 T tokens = 1.83e9 sequences at the final batch of 16 M
tokens (2048 sequences), with 16 micro-batches per pipeline as the 405 B model (Table 4); a floor
of 700 sequences/s trains it in 30 days. The paper gives no layout for the 70 B run, so micro_batch
is left to the planner. ZeRO 1: Llama 3 trains with FSDP sharding the optimizer state and the
gradients, not resharding the parameters after the forward pass (Sec. 3.3.2); ZeRO 1 counts the
optimizer sharding only (gradient sharding would save a further 2 bytes a parameter). State
sharding "auto"."""

llama3_405b = ZooEntry(
    "llama3-405b",
    Llama3(layers=126, hidden=16384, heads=128, ffn=53248),
    _parallel_job(batch=2048.0, throughput=330.0, samples=15.6e12 / 8192, micro_batches=16.0),
)
"""Llama 3 405B (Dubey et al. 2024, Table 3): 126 layers, model dimension 16384, 128 heads, 8 KV
heads, FFN 53248 (SwiGLU), vocabulary 128,256, 8,192-token sequences; 405.8 B parameters (405 B
published). 254 rows.

Per block and sample (S = 8192, H = 16384, Hkv = 1024, F = 53248, p = 2, no dropout): stash
8.25 S H (attention) + 23.5 S H (FFN); tensor-parallel traffic 8 S H bytes in four All-Reduces.

Job: 15.6 T training tokens = 1.90e9 sequences; the final batch of 16 M tokens (2048 sequences,
Section 3.4.1); Table 4's layout, tensor 8 x pipeline 16 x 128 data-parallel groups of 16
sequences each, gives 16 micro-batches per pipeline if each is one sequence a group; the paper does
not state the micro-batch size, so micro_batch is left to the planner. A floor of 330 sequences/s
(the paper's 16 K GPUs at 400 TFLOP/s each) trains it in 67 days. ZeRO 1 and state sharding "auto"
as for `llama3_70b`."""

transformer_1t = ZooEntry(
    "transformer-1t",
    DecoderLM(layers=128, hidden=25600, heads=160, kv_heads=160, ffn=4 * 25600, seq_len=2048, vocab=51200),
    _parallel_job(batch=3072.0, throughput=30.0, samples=450e9 / 2048, micro_batches=512.0, micro_batch=6.0),
)
"""Transformer-1T, the 1-trillion-parameter GPT model of Megatron-LM (Narayanan et al., "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021, Table 1) that the
Themis evaluation trains (Rashidi et al., ISCA 2022): 128 layers, hidden 25600, 160 heads, FFN 4 x
25600, sequence 2048, vocabulary 51,200; 1.008 T parameters. 258 rows.

Per block and sample (S = 2048, H = 25600, p = 2, dropout as Megatron-LM): stash 34 S H bytes,
tensor-parallel traffic 8 S H bytes in four All-Reduces, as `gpt3_175b`.

Job: Megatron-LM's configuration (examples/sc21/run_table_1.sh, 1T: tensor 8, pipeline 64,
micro-batch 1, global batch 3072 on 384 nodes of 8 GPUs), so 6 data-parallel replicas, micro_batch 6
(6 x 1 sequence) and 512 micro-batches per iteration; 450 B training tokens (the paper's estimate:
84 days on those 3072 GPUs) = 2.2e8 sequences, and a floor of 30 sequences/s that trains it in
those 85 days. That script recomputes activations (`--recompute-method uniform`); the default here
is no recomputation, the FlashAttention setting, and a job may ask for "full". ZeRO 1 as
`gpt3_175b`. State sharding "auto"."""

llama3_8b = ZooEntry(
    "llama3-8b",
    Llama3(layers=32, hidden=4096, heads=32, ffn=14336),
    _parallel_job(batch=512.0, throughput=100.0, samples=15e12 / 8192, micro_batch=64.0),
)
"""Llama 3 8B (Dubey et al. 2024, Table 3): 32 layers, model dimension 4096, 32 heads, 8 KV heads,
FFN 14336 (SwiGLU), vocabulary 128,256, 8,192-token sequences; 8.0 B parameters. 66 rows. Llama 3.1
8B has the same shapes. Job: 15 T tokens; batch 512 sequences and micro_batch 64 are this zoo's
choice (the published runs of `experiments/published_runs.py` set their own)."""

llama2_70b = ZooEntry(
    "llama2-70b",
    Llama3(layers=80, hidden=8192, heads=64, ffn=28672, vocab=32_000, seq_len=4096),
    _parallel_job(batch=1024.0, throughput=500.0, samples=2e12 / 4096, micro_batch=64.0),
)
"""Llama 2 70B (Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat Models", 2023, Table 1
and Sec. 2.2): 80 layers, model dimension 8192, 64 heads with grouped-query attention (8 KV heads),
SwiGLU FFN 28672, rotary positions, untied head, a 32,000-token vocabulary, 4,096-token context;
69.0 B parameters here. Same numerics as `Llama3` (bf16, FlashAttention, no dropout). Job: the
paper's 2 T tokens at 4 M tokens (1,024 sequences) a batch; micro_batch 64 is this zoo's choice."""

gpt_mcore = ZooEntry(
    "gpt-mcore",
    DecoderLM(
        layers=96,
        hidden=12288,
        heads=96,
        kv_heads=96,
        ffn=4 * 12288,
        seq_len=4096,
        vocab=131_072,
        tied_embedding=False,
    ),  # fmt: skip
    _parallel_job(batch=1152.0, throughput=30.0, samples=300e9 / 4096, micro_batch=48.0),
)
"""The GPT models of Megatron-LM's weak-scaling table (NVIDIA/Megatron-LM README, "Training Speed
and Scalability", images/model_table.png, 2024-07-15, Megatron-Core r0.8.0): GELU FFN of 4 x
hidden, multi-head attention, a vocabulary of 131,072 and 4,096-token sequences, untied input and
output embeddings (the parameter counts of the table, 1.7 B to 462 B, come out only untied). The
default is the table's 177 B row: 96 layers, hidden 12288, 96 heads (177.1 B parameters here);
the other rows are `--set layers=... hidden=... heads=... kv_heads=... ffn=...`. Job: the row's
batch of 1,152 sequences on 48 data-parallel replicas of one sequence (micro_batch 48)."""
