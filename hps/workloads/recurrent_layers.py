"""Builders of recurrent sequence-to-sequence layers: LSTM layers and additive attention.

Per-sample numbers and units as in `hps.workloads.layers` (a sample is one sentence pair).
"""

from __future__ import annotations

from hps.config.types import Layer
from hps.workloads.layers import FP32_BYTES, FWD_BWD, make_layer


def lstm(name: str, steps: int, d_in: int, hidden: int, directions: int = 1) -> Layer:
    """One LSTM layer over `steps` time steps, input width d_in, H = hidden units per direction;
    `directions` 2 is a bidirectional layer whose two outputs are concatenated.

    - forward FLOP per step and direction = 2 * 4H * (d_in + H) (the four gate matmuls on [x, h])
      + 20 H (gate nonlinearities, cell and hidden update, residual add); flops = 3x that, times
      steps * directions.
    - dense_param_bytes = directions * (4H * (d_in + H) + 4H) * 4 (one bias per gate unit).
    - mem_bytes = 3 * steps * directions * (d_in + 7H) * 4 (input and previous h read; four gates,
      cell and hidden state written).
    - act_bytes = steps * directions * H * 4.
    """
    h, runs = hidden, steps * directions
    return make_layer(
        name,
        flops=FWD_BWD * runs * (8.0 * h * (d_in + h) + 20.0 * h),
        mem_bytes=FWD_BWD * runs * (d_in + 7.0 * h) * FP32_BYTES,
        act_bytes=runs * h * FP32_BYTES,
        dense_param_bytes=directions * (4 * h * (d_in + h) + 4 * h) * FP32_BYTES,
    )


def additive_attention(name: str, queries: int, keys: int, hidden: int) -> Layer:
    """Normalized Bahdanau attention of `queries` decoder states over `keys` encoder outputs, all of
    width H; the output is each query concatenated with its context vector (2 H per query).

    - forward FLOP = 2 H^2 (queries + keys) (query and key projections) + queries * keys * (4 H + 5)
      (add, tanh, score against v; softmax) + 2 queries * keys * H (context); flops = 3x that.
    - dense_param_bytes = (2 H^2 + 2 H + 1) * 4 (the two projections, v, the normalization bias and
      scalar).
    - mem_bytes = 3 * (2 (queries + keys) H + queries * keys * (H + 2)) * 4 (states and their
      projections, the pairwise tanh tensor, scores and weights).
    - act_bytes = queries * 2 H * 4.
    """
    q, k, h = queries, keys, hidden
    pairs = q * k
    return make_layer(
        name,
        flops=FWD_BWD * (2.0 * h * h * (q + k) + pairs * (4.0 * h + 5.0) + 2.0 * pairs * h),
        mem_bytes=FWD_BWD * (2.0 * (q + k) * h + pairs * (h + 2.0)) * FP32_BYTES,
        act_bytes=q * 2 * h * FP32_BYTES,
        dense_param_bytes=(2 * h * h + 2 * h + 1) * FP32_BYTES,
    )
