"""The profile check on 8 host CPU devices (a few minutes on 2 cores): the zoo transformer at
widths 256 and 1,024 (2 layers, sequence 16, batch 64 in 2 micro-batches) as one stage on 4 host
devices taken as cloud-2026's h200; each layer profiled at the stage's micro-batch and twice it
(the median of 9 rounds: the embedding's backward, a 31 MB dense gradient per device at width
256, is now and then held up by the host allocator for tens of ms, and a median of 5 rounds
sometimes lands on those), the stage's compute predicted from the roofline and from the
profile, then executed and measured.

    hps run experiments/profile_check_cpu.py

Prints predicted vs measured per width; `experiments/profile_check.py` is the same check at a
GPU's sizes.
"""

from hps.studies.profile_check import ProfileCheckConfig


def config() -> ProfileCheckConfig:
    return ProfileCheckConfig(
        name="profile_check_cpu",
        widths=(256, 1024),
        layers=2,
        seq_len=16,
        batch=64,
        micro_batches=2,
        replicas=4,
        repeats=9,
    )
