"""The collective agent: the Flax policy over dimension permutations, its REINFORCE training and
its evaluation beside Themis and the fixed orders."""
