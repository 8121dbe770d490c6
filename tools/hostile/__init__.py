"""The hostile-input fuzzer: every command run as a real `hps` process with malformed and extreme
inputs, and faults around a training run folder, each classed by how it ended. Run it with
`hps run experiments/hostile_sweep.py` from the repository root."""
