"""Decoder-only language models at published sizes: GPT-3 175B, Llama 3 70B and 405B, and the
1-trillion-parameter transformer of Megatron-LM that the Themis evaluation trains.

A sample is one training sequence of `seq_len` tokens. Rows: the input embedding, one attention
row and one FFN row per layer, and the LM head (final norm, output projection over the
vocabulary, next-token loss at every position). These models do not fit one device: their default
jobs pipeline them over many stages (finite micro-batches) and let the planner shard parameter and
optimizer state. They are planning workloads; the zoo has no Flax model of them to execute.
"""

from __future__ import annotations

from hps.config.types import JobDefaults, Layer
from hps.errors import ConfigError
from hps.workloads.entry import ZooEntry, architecture, parameter_count
from hps.workloads.layers import ID_BYTES, lm_head, token_embedding
from hps.workloads.nlp import TransformerShape


@architecture(
    "Decoder LM, {parameters} parameters: {layers} layers, hidden {hidden}, {heads} heads, FFN {ffn}, "
    "sequence {seq_len}, vocabulary {vocab}; {kv_heads} KV heads, {ffn_kind} FFN, {head} LM head"
)
class DecoderLM(TransformerShape):
    """A decoder-only transformer LM. Beyond the `TransformerShape` sizes: `kv_heads` key/value
    heads (equal to `heads`: multi-head attention), and three design flags whose defaults are the
    GPT-2/GPT-3 design, which `Llama3` changes: `gated_ffn` (SwiGLU instead of GELU),
    `tied_embedding` (the LM head projects with the word-embedding matrix), `learned_positions` (a
    position table of seq_len rows; False: rotary positions, no table).

    Per layer: attention with `kv_heads` K/V heads (grouped-query when fewer than `heads`), then the
    FFN. The input embedding reads seq_len + 1 token ids per sample (the last one is only a label)
    and has no LayerNorm of its own. Every layer counts the biases and two-parameter LayerNorms of
    `hps.workloads.layers.attention_block`; for bias-free, RMSNorm models (Llama) that adds under
    1e-4 of the parameters.
    """

    kv_heads: int
    gated_ffn: bool = False
    tied_embedding: bool = True
    learned_positions: bool = True

    def check(self, entry: str) -> None:
        super().check(entry)
        if self.heads % self.kv_heads:
            raise ConfigError("workload", f"{entry}.kv_heads", f"must divide heads ({self.heads}), got {self.kv_heads}")

    def row_count(self) -> int:
        return 2 * self.layers + 2  # embedding, the layers' rows, LM head

    def table(self) -> tuple[Layer, ...]:
        tables = (self.vocab, self.seq_len) if self.learned_positions else (self.vocab,)
        embedding = token_embedding(
            "embedding", self.seq_len, self.hidden, tables, ids_per_token=1, layer_norm=False, label_bytes=ID_BYTES
        )
        head = lm_head("head", self.seq_len, self.hidden, self.vocab, tied=self.tied_embedding)
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
    vocabulary (128K in Table 3: 100K tiktoken tokens + 28K), and 8,192-token pre-training sequences."""

    kv_heads: int = 8
    seq_len: int = 8192
    vocab: int = 128_256
    gated_ffn: bool = True
    tied_embedding: bool = False
    learned_positions: bool = False


gpt3_175b = ZooEntry(
    "gpt3-175b",
    DecoderLM(layers=96, hidden=12288, heads=96, kv_heads=96, ffn=4 * 12288, seq_len=2048, vocab=50257),
    JobDefaults(batch=1536.0, throughput=60.0, samples=300e9 / 2048, micro_batches=128.0, state_sharding="auto"),
)
"""GPT-3 175B (Brown et al., "Language Models are Few-Shot Learners", 2020, Table 2.1): 96 layers,
d_model 12288, 96 heads of 128, FFN 4 x 12288, 2048-token context, the GPT-2 BPE vocabulary of
50,257 tokens; 174.6 B parameters here (175 B published). 194 rows.

Job: 300 B training tokens (the paper's run) = 1.46e8 sequences; batch 1536 sequences (3.1 M
tokens; the paper's 3.2 M, and Megatron-LM's 175 B configuration); a floor of 60 sequences/s trains
it in 28 days. Megatron-LM's 175 B run pipelines it over 16 stages with 12 data-parallel replicas,
so each pipeline takes 128 sequences per iteration: 128 micro-batches of one sequence. State
sharding "auto": no stage fits a device with replicated Adam state."""

llama3_70b = ZooEntry(
    "llama3-70b",
    Llama3(layers=80, hidden=8192, heads=64, ffn=28672),
    JobDefaults(batch=2048.0, throughput=700.0, samples=15e12 / 8192, micro_batches=16.0, state_sharding="auto"),
)
"""Llama 3 70B (Dubey et al. 2024, Table 3): 80 layers, model dimension 8192, 64 heads, 8 KV heads,
FFN 28672 (SwiGLU), vocabulary 128,256, 8,192-token sequences; 70.6 B parameters. 162 rows.

Job: the paper's pre-training recipe, 15 T tokens = 1.83e9 sequences at the final batch of 16 M
tokens (2048 sequences), with 16 micro-batches per pipeline as the 405 B model (Table 4); a floor
of 700 sequences/s trains it in 30 days. State sharding "auto" (the paper shards parameters,
gradients and optimizer state, FSDP-style)."""

llama3_405b = ZooEntry(
    "llama3-405b",
    Llama3(layers=126, hidden=16384, heads=128, ffn=53248),
    JobDefaults(batch=2048.0, throughput=330.0, samples=15.6e12 / 8192, micro_batches=16.0, state_sharding="auto"),
)
"""Llama 3 405B (Dubey et al. 2024, Table 3): 126 layers, model dimension 16384, 128 heads, 8 KV
heads, FFN 53248 (SwiGLU), vocabulary 128,256, 8,192-token sequences; 405.8 B parameters (405 B
published). 254 rows.

Job: 15.6 T training tokens = 1.90e9 sequences; the final batch of 16 M tokens (2048 sequences,
Section 3.4.1); Table 4's layout, 16 pipeline stages over 128 data-parallel groups of 16 sequences
each, gives 16 micro-batches of one sequence; a floor of 330 sequences/s (the paper's 16 K GPUs
at 400 TFLOP/s each) trains it in 67 days. State sharding "auto", as the paper's FSDP."""

transformer_1t = ZooEntry(
    "transformer-1t",
    DecoderLM(layers=128, hidden=25600, heads=160, kv_heads=160, ffn=4 * 25600, seq_len=2048, vocab=51200),
    JobDefaults(batch=3072.0, throughput=30.0, samples=450e9 / 2048, micro_batches=512.0, state_sharding="auto"),
)
"""Transformer-1T, the 1-trillion-parameter GPT model of Megatron-LM (Narayanan et al., "Efficient
Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021, Table 1) that the
Themis evaluation trains (Rashidi et al., ISCA 2022): 128 layers, hidden 25600, 160 heads, FFN 4 x
25600, sequence 2048, vocabulary 51,200; 1.008 T parameters. 258 rows.

Job: Megatron-LM's configuration, batch 3072 sequences over 3072 GPUs as 8-way tensor x 64-stage
pipeline x 6 data-parallel replicas, so each pipeline takes 512 sequences per iteration: 512
micro-batches of one sequence; 450 B training tokens (the paper's estimate: 84 days on those 3072
GPUs) = 2.2e8 sequences, and a floor of 30 sequences/s that trains it in those 85 days. State
sharding "auto"."""
