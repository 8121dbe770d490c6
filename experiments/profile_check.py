"""Profile check for a person with one GPU (a few minutes): the zoo transformer at widths 256 and
1,024 (4 layers, sequence 128, batch 256 in 2 micro-batches) as one stage on the first device,
taken as cloud-2026's h200; each layer profiled at the stage's micro-batch and twice it; the
stage's compute predicted from the roofline and from the profile, then executed and measured.

    hps run experiments/profile_check.py

Prints predicted vs measured per width. On a CPU it runs the same check on the host (slowly at
width 1,024: lower `batch` or `seq_len`).
"""

from hps.studies.profile_check import ProfileCheckConfig


def config() -> ProfileCheckConfig:
    return ProfileCheckConfig(name="profile_check", widths=(256, 1024), batch=256, micro_batches=2, replicas=1)
