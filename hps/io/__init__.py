"""Files hps writes for a run: run folders (locks, manifests, stop handling) and figures."""
