"""Typed errors. The CLI prints them without a traceback and exits with status 2."""

from __future__ import annotations


class HpsError(Exception):
    """Base class of every error hps raises on purpose."""


class ConfigError(HpsError):
    """An input file or command-line value is invalid.

    Names the file (or flag), the field and what is wrong, e.g.
    ``topologies/catalogs/x.toml: resource[2].memory_GiB: must be > 0, got -1``.
    """

    def __init__(self, source: str, field: str, problem: str):
        self.source = str(source)
        self.field = field
        self.problem = problem
        where = f"{self.source}: {field}" if field else self.source
        super().__init__(f"{where}: {problem}")


class InstanceTooLarge(HpsError):
    """An instance's padded arrays would need more memory than the model may take."""


class SearchSpaceTooLarge(HpsError):
    """A search was asked for a space larger than it will take on (exhaustive: enumerate; gradient: relax)."""


class TrainingDiverged(HpsError):
    """A training chunk produced a non-finite loss or non-finite parameters. Training stops before
    that state is saved, so the run folder keeps its last good checkpoint."""


class RunFolderBusy(HpsError):
    """Another live process holds the run folder's lock (two runs into one `--out`)."""


class CheckpointDamaged(ConfigError):
    """A checkpoint step whose arrays or spec do not match the digest saved with them (or
    cannot be read at all). Names the step's folder."""


class NonFiniteResult(HpsError):
    """A model gave a non-finite figure (inf or NaN) where every input was in range: a result
    that no output shows. Names the command's output and the figure's path in it."""

    def __init__(self, where: str, path: str, value: float):
        self.where, self.path, self.value = where, path, value
        super().__init__(f"{where}: {path or 'the result'} is not a finite number ({value!r}); no output was written")


class CannotWrite(HpsError):
    """A run folder or output that cannot be written: not writable, too little free space, or a
    write that failed on the way (no space left, permission denied, a read-only file system).
    Names the file or folder; what was committed before stays as it was."""


class Stopped(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived: the command unwinds as from Ctrl-C (locks released,
    nothing half-written) and exits with 128 + signum."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signum)


class StageDoesNotFit(HpsError):
    """A plan's stage needs more memory per device than its resource type has (checked before
    anything runs); the message names the stage, the need and the limit."""
