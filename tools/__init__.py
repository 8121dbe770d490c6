"""Project tooling that is not part of the hps package (not shipped in the wheel)."""
