"""Hard placement instances: tight pooled caps, memory that forces pipeline cuts and floors
past what one type reaches, drawn through the same generator (docs/environments.md)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from hps.placement.env.catalog_gen import base_tables
from hps.placement.env.generator import (
    HARD_HELDOUT,
    HARD_TRAIN,
    InstanceSplit,
    full_allocation,
    generate_instances,
)

PLAIN = InstanceSplit("hard-test-plain", 8, 12, 4, 8, salt=61)
HARD = dataclasses.replace(
    PLAIN, floor_low=1.2, floor_high=2.0, cap_low=0.05, cap_high=0.3, memory_low=0.1, memory_high=0.5
)


@pytest.fixture(scope="module")
def pair():
    key = jax.random.PRNGKey(0)
    return jax.device_get(generate_instances(key, 64, PLAIN)), jax.device_get(generate_instances(key, 64, HARD))


def test_caps_and_memory_follow_their_ranges_on_the_same_draws(pair):
    plain, hard = pair
    real = plain.placement.type_mask
    assert (real == hard.placement.type_mask).all()  # the same catalogues, only scaled
    factor = hard.placement.memory[real] / plain.placement.memory[real]
    assert factor.min() >= 0.1 * 0.9999 and factor.max() <= 0.5 * 1.0001 and factor.max() / factor.min() > 3
    same = ("peak_flops", "price_per_hour", "mem_bw", "nic_bw")
    for name in same:
        np.testing.assert_array_equal(getattr(hard.placement, name), getattr(plain.placement, name))
    caps = hard.placement.max_units[real]
    assert caps.min() >= 1 and caps.max() <= round(0.3 * max(base_tables(64)["max_units"]))
    assert (caps <= plain.placement.max_units[real].max()).all() and np.median(caps) < np.median(
        plain.placement.max_units[real]
    )


def test_floors_lie_in_their_fraction_of_the_best_single_type_reach(pair):
    _, hard = pair
    reach = jax.vmap(lambda p, a, b: full_allocation(p, a, b))(hard.placement, hard.alpha, hard.beta)
    throughput, _, fits = jax.device_get(reach)
    best = np.where(fits, throughput, 0.0).max(axis=1)
    some = best > 0
    fraction = hard.placement.throughput[some] / best[some]
    assert fraction.min() >= 1.2 * 0.999 and fraction.max() <= 2.0 * 1.001
    # a single type rarely meets such a floor: only where its throughput peaks below its cap
    # (the All-Reduce grows with the units), so that full allocation is not its best
    assert np.isfinite(hard.reference_cost[some]).mean() < 0.1


def test_the_default_splits_keep_their_draws():
    """The hard knobs draw from a stream of their own: a split with the default knobs spelt out
    generates exactly the same instances."""
    key = jax.random.PRNGKey(1)
    spelt = dataclasses.replace(PLAIN, cap_low=0.25, cap_high=1.0, memory_low=1.0, memory_high=1.0)
    plain, spelt = (jax.tree.leaves(generate_instances(key, 8, split)) for split in (PLAIN, spelt))
    for a, b in zip(plain, spelt):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_hard_splits_are_checked_and_held_out_differs():
    with pytest.raises(ValueError, match="cap fractions"):
        InstanceSplit("bad", cap_low=0.5, cap_high=1.5)
    with pytest.raises(ValueError, match="memory factors"):
        InstanceSplit("bad", memory_low=0.0)
    assert HARD_TRAIN.salt != HARD_HELDOUT.salt
    assert (HARD_TRAIN.min_layers, HARD_TRAIN.max_layers) != (HARD_HELDOUT.min_layers, HARD_HELDOUT.max_layers)
