"""Every size limit of hps, defined once, and two sentinel numbers (an unbounded chunk count,
the logit of an impossible action).

Two kinds of size limit, which differ on purpose:

- What a configuration may hold (``MAX_*``): the loaders (or, for chunks, the job and
  ``--chunks`` checks) reject more with a ConfigError. Network dimensions and All-Reduce chunks
  are also the padded shapes of the collective arrays: a network or a chunk count is padded to
  the least of a few buckets that holds it (DIMS_BUCKETS, CHUNK_BUCKETS), the largest of which
  is the accepted maximum. MAX_DIMENSION_SIZE, MAX_NETWORK_SIZE and MAX_UNITS bound the
  counts the models compute exactly (step counts, int32 NPU counts, the replica scan); the
  loaders refuse more before anything is allocated. The ranges of every numeric value (bytes,
  FLOP, seconds, prices) live in ``hps.config.ranges``.
- The learned placement policy's padded shapes (``POLICY_*``): the placement env, its
  instance generator and the policy work on arrays padded to one of a few size buckets, so
  one compile serves every instance of a bucket, and the buckets reach the loaders' limits.

This module imports nothing, so every layer of hps may import it.
"""

from __future__ import annotations

MAX_DIMS = 6
"""Network dimensions: a network file or resource type has 1 to 6 ``[[dimension]]`` tables."""

DIMS_BUCKETS = (4, 6)
"""The padded widths of network arrays: a network is padded to the least that holds it
(padded dimensions have size 1 and take no part), so one compile serves every network of a
bucket and networks of up to 4 dimensions keep their 4-wide shapes."""

MAX_IN_FLIGHT = 8
"""Phases one network dimension serves at once (``in_flight``): the collective simulator keeps
8 lanes per dimension, those past a dimension's in_flight never free."""

MAX_DIMENSION_SIZE = 2**16
"""NPUs of one network dimension: the most a network file or resource type may give one
dimension, the size up to which the jnp step count of halving-doubling (⌈log2 P⌉,
`steps_per_phase_codes`) is exact; the collective instance generator draws sizes up to it."""

MAX_NETWORK_SIZE = 2**30
"""NPUs of a whole network (the product of its dimension sizes): int32 counts of NPUs and of
the products of sizes a chunk has passed hold it, with room to add a replica count."""

MAX_UNITS = 2**16
"""Units of one resource type (``max_units``): the replica counts k = 1..max_units the placement
models provision."""

MAX_CHUNKS = 1024
"""All-Reduce chunks: a job or ``--chunks`` asks for 1 to 1,024. Chunk-order arrays are padded
to the chunk bucket of the count (`chunks_bucket`), not to this maximum."""

CHUNK_BUCKETS = (256, 1024)
"""The padded rows of chunk-order arrays (and of the simulator's per-chunk arrays): a count C is
padded to the least bucket that holds it, so an All-Reduce of up to 256 chunks keeps its 256-row
arrays (and their cost) and only 257 to 1,024 chunks use 1,024 rows. Rows past C are unused
and add no load; each bucket compiles once."""


def chunks_bucket(n_chunks: int) -> int:
    """The padded rows (256 or 1,024) of the chunk-order arrays of an All-Reduce in `n_chunks`
    chunks: the least of CHUNK_BUCKETS that is at least n_chunks; ValueError past MAX_CHUNKS."""
    return policy_bucket(n_chunks, CHUNK_BUCKETS)


MAX_WORKLOAD_LAYERS = 4096
"""Layers a workload file may hold (``[[layer]]`` tables)."""

MAX_CATALOG_TYPES = 32
"""Resource types a catalogue file may hold (``[[resource]]`` tables)."""

MAX_MEASURED_TIMES = 1024
"""Measured times one layer of a workload file may hold (``[[layer.measured]]`` tables)."""

MAX_PLAN_FILE_BYTES = 16 * 2**20
"""Bytes a plan file may hold (16 MiB: a plan of 4,096 one-layer stages takes well under 1 MiB)."""

MAX_PLAN_FILE_DEPTH = 32
"""Nesting of arrays and objects a plan file may have (a valid plan file nests 3 deep)."""

MAX_TOML_FILE_BYTES = 16 * 2**20
"""Bytes a catalogue, network or workload file may hold (16 MiB, as a plan file: the largest
shipped file, a catalogue of 27 types, takes 34 KB; a workload of 4,096 layers with measured
times a few MB)."""

MAX_TOML_FILE_DEPTH = 32
"""Nesting of arrays and tables a TOML input may have (valid files nest at most 3 deep; tomllib
recurses once per level, so past Python's recursion limit a file would end in a traceback)."""

POLICY_LAYERS = 32
"""Layers of the learned placement policy's smallest padded instance (the training bucket)."""

POLICY_TYPES = 6
"""Resource types of the learned placement policy's smallest padded instance."""

POLICY_UNITS = 64
"""Units per stage of the learned placement policy's smallest padded instance (its replica
grid 1..64)."""

POLICY_LAYER_BUCKETS = (32, 64, 128, 256, 512, 1024, 2048, 4096)
POLICY_TYPE_BUCKETS = (6, 16, 32)
POLICY_UNIT_BUCKETS = (64, 512, 4096, 65536)
"""The padded sizes the placement policy, its env and the planner use: an instance is padded
to the least bucket that holds its layers, types and largest max_units, so each bucket
compiles once and one checkpoint plans every workload (to MAX_WORKLOAD_LAYERS layers),
catalogue (to MAX_CATALOG_TYPES types) and cap (to MAX_UNITS units) the loaders accept. The
policy's parameters depend on none of these sizes."""


def policy_bucket(size: int, buckets: tuple[int, ...]) -> int:
    """The least of `buckets` (ascending) that is at least `size`; ValueError past the largest."""
    for bucket in buckets:
        if size <= bucket:
            return bucket
    raise ValueError(f"{size} is past the largest padded size {buckets[-1]}")


MAX_EXECUTE_STEPS = 100_000
"""Training steps one ``hps execute`` runs: plenty to measure a plan; more is refused before
anything compiles (a run past it would take hours on any device pool)."""

MAX_PLANS = 2**20
"""Plans `hps plan --plans` samples at most: its beam search holds every plan's environment state
at once, about a kilobyte each for a small workload (a GiB at this count), and the top-k over
plans x types must stay an int32 index."""

MAX_SWEEP_POINTS = 10_000
"""Points (floors x price scales) one `hps sweep` plans at most: each takes up to --point-seconds
(5 s by default), so this many take up to about 14 hours; more is refused before any work."""

MAX_SEARCH_BUDGET = 10**7
"""Evaluations `hps search --evaluations` asks at most: a random search scores about 1e7 plans of a
small workload in seconds, the genetic search and large workloads take minutes at this count."""

MIN_TRAIN_MINUTES = 0.1
MAX_TRAIN_MINUTES = 1e6
"""`hps train --minutes` from 6 s (less is no budget: compiling alone takes longer) to about two
years."""

MAX_BATCH_PER_NPU = 1e6
"""`hps collective --iteration --batch-per-npu` at most: a million samples per NPU per iteration,
far past any device's memory; the iteration's compute grows with it without bound."""

MAX_ENVS = 2**20
"""Environments per training update: their batched state is held in memory at once."""

MAX_PROCESSES = 4096
"""Processes of a multi-process training run."""

MAX_PROFILE_REPEATS = 1000
"""Measurements per layer of `hps profile` (the median is kept)."""

MAX_BENCH_SECONDS = 3600.0
"""Seconds a benchmark times one side (or the solver runs one point)."""

MAX_BENCH_NETWORKS = 2**20
"""Random networks in one `hps bench collective` batch (2^20 × 64-chunk orders and results fit a
few hundred MiB of host memory)."""

UNBOUNDED_CHUNKS = 1_000_000
"""num_chunks of a training run that a wall-clock budget ends (``--minutes``), not a chunk count."""

MASKED_LOGIT = -1e9
"""The logit of a masked choice (an action outside the action mask, an attention key that is
padding): so negative that its softmax weight is 0, yet finite, so that softmax, its gradient
and the entropy stay finite (−inf would give NaN through 0 · inf)."""

DENSE_MODEL_BYTES = 2**31
"""Bytes the jnp placement model's largest arrays of one instance may take: its segment table
scans k = 1..K for every (first layer, last layer, type), L²·T·K numbers. Past it, build_params
raises InstanceTooLarge naming the sizes (the numpy model and the exact solver have no such
table)."""
