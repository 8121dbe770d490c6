"""Device check: on a machine with an accelerator (or CPU-only), the quickstart and then
`hps execute --check` on every model workload with one and two stages, tensor-parallel degree 1
and 2 where the device pool allows, printing one table: equal or not, the largest relative and
absolute differences and the parameter, and the measured step time.

    hps run experiments/device_check.py --out runs/device_check

About 2 minutes on one H200 (the quickstart about 90 s of it); about 10 minutes on 2 CPU cores.
"""

from hps.studies.device_check import DeviceCheckConfig


def config() -> DeviceCheckConfig:
    return DeviceCheckConfig(name="device_check")
