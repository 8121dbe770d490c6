"""The training recipe's env count and chunk size scale with the device: 4,096 envs and 10
updates a chunk on 2 CPU cores (where the recipe's figures were measured), more envs with more
cores, and on an accelerator one env per MiB of its memory up to 65,536 (an 80 GiB device)."""

from __future__ import annotations

import pytest

from hps.rl.device_scale import device_recipe_scale, recipe_scale


@pytest.mark.parametrize(
    "platform, cores, memory, want",
    [
        ("cpu", 1, None, (4096, 10)),
        ("cpu", 2, None, (4096, 10)),
        ("cpu", 16, None, (32768, 10)),
        ("cpu", 6, None, (8192, 10)),
        ("gpu", 16, 80 * 2**30, (65536, 50)),
        ("gpu", 16, 141 * 2**30, (65536, 50)),
        ("gpu", 16, 16 * 2**30, (16384, 50)),
        ("tpu", 4, 2 * 2**30, (4096, 50)),
        ("gpu", 8, None, (16384, 10)),
    ],
)
def test_recipe_scale(platform, cores, memory, want):
    assert recipe_scale(platform, cores, memory) == want


def test_this_machines_recipe_is_a_multiple_of_the_samples_per_instance():
    from hps.placement.agent.train import default_placement_config

    envs, updates = device_recipe_scale()
    assert envs % default_placement_config().samples_per_instance == 0 and updates >= 1
