"""The LSTM cell, and a whole teacher-forced LSTM sequence with a hand-written backward pass.

`lstm_sequence` is what training differentiates: the decoder's recurrence over every decision
of a batch of episodes. Its backward pass is one reverse scan that emits the gate gradients of
every step, after which the recurrent kernel's gradient is a single (H, S·N) × (S·N, 4H)
matmul. Left to autodiff, XLA:CPU computes that weight gradient inside the loop, transposing
each step's (N, 4H) gate gradients first, a large share of a training update on CPU.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gate_scales(hidden: int) -> jnp.ndarray:
    """(4H,) factors: sigmoid(x) = (1 + tanh(x/2)) / 2, so the input, forget and output gates
    take tanh of half their pre-activation and the candidate of all of it."""
    return jnp.concatenate([jnp.full((2 * hidden,), 0.5), jnp.ones((hidden,)), jnp.full((hidden,), 0.5)])


def _cell(gates, cell):
    """One LSTM cell update from pre-activation gates (…, 4H) and the cell state (…, H):
    (hidden, cell, squashed gates (…, 4H), tanh of the new cell), the last two being what the
    backward pass of `lstm_sequence` needs."""
    squashed = jnp.tanh(gates * gate_scales(cell.shape[-1]))
    i, f, g, o = jnp.split(squashed, 4, axis=-1)
    new_cell = (0.5 + 0.5 * f) * cell + (0.5 + 0.5 * i) * g
    squashed_cell = jnp.tanh(new_cell)
    return (0.5 + 0.5 * o) * squashed_cell, new_cell, squashed, squashed_cell


def lstm_update(gates, cell):
    """One LSTM cell update from pre-activation gates (…, 4H) [input, forget, candidate, output]
    and the cell state (…, H); returns (hidden, cell).

    All four gates take one tanh over (…, 4H) (`gate_scales`): on CPU that is about twice as
    fast as XLA's logistic."""
    hidden, cell, _, _ = _cell(gates, cell)
    return hidden, cell


def _forward(gates_in, kernel):
    """Hidden states (S, N, H) and the residuals the backward pass needs."""
    hidden_size = kernel.shape[0]
    zeros = jnp.zeros(gates_in.shape[1:-1] + (hidden_size,), gates_in.dtype)

    def step(carry, gates):
        hidden, cell = carry
        new_hidden, new_cell, squashed, squashed_cell = _cell(gates + hidden @ kernel, cell)
        return (new_hidden, new_cell), (new_hidden, (squashed, cell, squashed_cell, hidden))

    _, (hiddens, residuals) = jax.lax.scan(step, (zeros, zeros), gates_in)
    return hiddens, residuals


@jax.custom_vjp
def lstm_sequence(gates_in, kernel):
    """Hidden states (S, N, H) of an LSTM run over S steps from zero state, with input gate
    pre-activations gates_in (S, N, 4H) (time-major) and recurrent kernel (H, 4H); the same
    numbers as S calls of `lstm_update(gates_in[s] + hidden @ kernel, cell)`."""
    return _forward(gates_in, kernel)[0]


def _lstm_sequence_fwd(gates_in, kernel):
    hiddens, residuals = _forward(gates_in, kernel)
    return hiddens, (residuals, kernel)


def _lstm_sequence_bwd(saved, d_hiddens):
    (squashed, cells, squashed_cells, previous_hiddens), kernel = saved
    scales = gate_scales(kernel.shape[0])

    def step(carry, inputs):
        d_hidden_next, d_cell_next = carry
        d_hidden_out, s, cell_prev, tanh_cell = inputs
        s_i, s_f, s_g, s_o = jnp.split(s, 4, axis=-1)
        d_hidden = d_hidden_out + d_hidden_next
        d_cell = d_cell_next + d_hidden * (0.5 + 0.5 * s_o) * (1.0 - tanh_cell**2)
        d_s = jnp.concatenate(
            [
                0.5 * d_cell * s_g,  # input gate
                0.5 * d_cell * cell_prev,  # forget gate
                d_cell * (0.5 + 0.5 * s_i),  # candidate
                0.5 * d_hidden * tanh_cell,  # output gate
            ],
            axis=-1,
        )
        d_gates = d_s * (1.0 - s**2) * scales
        return (d_gates @ kernel.T, d_cell * (0.5 + 0.5 * s_f)), d_gates

    zeros = jnp.zeros_like(d_hiddens[0])
    inputs = (d_hiddens, squashed, cells, squashed_cells)
    _, d_gates = jax.lax.scan(step, (zeros, zeros), inputs, reverse=True)
    d_kernel = jnp.einsum("snh,sng->hg", previous_hiddens, d_gates)
    return d_gates, d_kernel


lstm_sequence.defvjp(_lstm_sequence_fwd, _lstm_sequence_bwd)
