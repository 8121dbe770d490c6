"""Executor calibration: the cost model's prediction error on executed plans, before and after
profiling, on 8 host devices (two pools of 4, named cpu and t4 of cloud-2024).

For each global batch B (4,096 and 65,536): every layer of ctr-dnn-small is profiled on both
pools at micro-batch B/2, then the CPU-stage | GPU-stage plan (embedding and concat on cpu, the
MLP on t4, 4 replicas each, 2 micro-batches, a 4-chunk Themis All-Reduce) runs 3 times on the
roofline table and 3 times on the profiled table; per stage, error = measured / predicted - 1.

    hps run experiments/executor_calibration.py
"""

from hps.studies.executor_calibration import ExecutorCalibrationConfig


def config() -> ExecutorCalibrationConfig:
    return ExecutorCalibrationConfig(
        name="executor_calibration",
        workload="ctr-dnn-small",
        batches=(4096, 65536),
        runs=3,
        repeats=7,
        devices="cpu=0-3,t4=4-7",
        schedule=("cpu", "cpu", "t4", "t4", "t4", "t4"),
        replicas=(4, 4),
        chunks=4,
    )
