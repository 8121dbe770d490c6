"""`metrics.jsonl` of a run folder: one JSON record per committed chunk, appended after the
chunk's checkpoint is saved, so the records never run ahead of the checkpoints.

Read back strictly: a line that is not a JSON record is a ConfigError naming it (a file changed
after hps wrote it is reported, never silently rewritten), except a last line cut short (no
newline: a run stopped while appending it), which `parse` reports as torn. `reconcile` holds the
records against the chunks the resumed checkpoint has done. The file is opened without following
a symbolic link (`hps.io.runfolder.owned`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from hps.errors import ConfigError
from hps.io.runfolder import owned

CHANGED = "the file was changed after hps wrote it; repair it or move it away"


@dataclass(frozen=True)
class MetricsFile:
    """records: the file's complete records, in file order; torn: a last line cut short was left out."""

    records: list[dict]
    torn: bool


def parse(path: Path) -> MetricsFile:
    """The records of metrics file `path` (none when it is missing); ConfigError naming the line
    of a complete line that is not a metrics record, or when the path is a symbolic link."""
    text = owned.read_text(path)
    if text is None:
        return MetricsFile(records=[], torn=False)
    *complete, tail = text.split("\n")
    records = []
    for number, line in enumerate(complete, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not (isinstance(record, dict) and isinstance(record.get("chunk"), int)):
            raise ConfigError(str(path), f"line {number}", f"not a JSON metrics record; {CHANGED}")
        records.append(record)
    return MetricsFile(records=records, torn=bool(tail.strip()))


def read_metrics(path: Path, before_chunk: int | None = None) -> list[dict]:
    """The records of a run folder's metrics file (those of chunks < before_chunk when given)."""
    return [r for r in parse(path).records if before_chunk is None or r["chunk"] < before_chunk]


def text_of(records: list[dict]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


@dataclass(frozen=True)
class Reconciled:
    """Records held against a checkpoint that has done `done` chunks. kept: the records of
    chunks before it; past: the chunks of records after it; lost: chunks before it without a
    record; uncommitted: the checkpoint's own chunk alone lacks its record (a run stopped
    between saving the checkpoint and appending the record)."""

    kept: list[dict]
    past: list[int]
    lost: list[int]
    uncommitted: bool


def reconcile(records: list[dict], done: int) -> Reconciled:
    kept = [r for r in records if r["chunk"] < done]
    present = {r["chunk"] for r in kept}
    lost = [chunk for chunk in range(done) if chunk not in present]
    past = sorted({r["chunk"] for r in records if r["chunk"] >= done})
    return Reconciled(kept=kept, past=past, lost=lost, uncommitted=lost == [done - 1])


def spans(chunks: list[int]) -> str:
    """Chunk numbers in words: "3", "3–5", "1, 4–6"."""
    parts, start = [], None
    for index, chunk in enumerate(chunks):
        start = chunk if start is None else start
        if index + 1 == len(chunks) or chunks[index + 1] != chunk + 1:
            parts.append(str(chunk) if start == chunk else f"{start}–{chunk}")
            start = None
    return ", ".join(parts)


def notices(path: Path, parsed: MetricsFile, reconciled: Reconciled, step: int) -> list[str]:
    """One line for each way the metrics file disagrees with the checkpoint at update `step`."""
    lines = []
    if parsed.torn:
        lines.append(f"{path}: dropped its last line, cut short by a run stopped while writing it")
    if reconciled.lost:
        lines.append(
            f"{path}: no records of chunks {spans(reconciled.lost)}, which the checkpoint (update {step}) has "
            "done: they were removed after hps wrote them; training goes on and appends after them"
        )
    if reconciled.past:
        lines.append(
            f"{path}: dropped the records of chunks {spans(reconciled.past)}, past the checkpoint resumed from "
            f"(update {step})"
        )
    return lines
