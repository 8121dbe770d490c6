"""Collectives (the Themis problem): the order in which each chunk of an All-Reduce visits the
dimensions of a multi-dimensional network.

    model/    networks, chunk orders (baseline, Themis, ...), the event-driven simulator, the
              iteration level
    env/      network generators and the functional CollectiveEnv
    agent/    the Flax collective policy, its training and evaluation
    studies   the shipped topology suite and iteration studies, run through the model
"""
