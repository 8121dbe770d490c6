"""`run_experiment`: a config's items, each saved as it finishes (so a killed run resumes where
it stopped), then the kind's summary as results.json, figures and report.md.

Run folder (out_dir):
    config.json        the config the items belong to (items of another config are discarded)
    items/<key>.json   one finished item: {"key", "result", "seconds"}
    results.json       {"experiment", "kind", "config", "results"}: deterministic, sorted keys
    timings.json       seconds per item and in all (kept out of results.json)
    *.png, report.md   the kind's figures and the report
Every file is written through a temporary file and a rename.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import sys
import time
from pathlib import Path

from tqdm import tqdm

from hps.config.files import atomic_write_text
from hps.errors import ConfigError
from hps.experiments.base import ITEM_KEY, experiment_kind_of
from hps.experiments.files import json_text, read_json, write_json_atomic
from hps.experiments.report import report_markdown


def config_document(config) -> dict:
    """The config as JSON (tuples become lists)."""
    return json.loads(json_text(dataclasses.asdict(config)))


def _check_items(items) -> None:
    keys = [key for key, _ in items]
    bad = [key for key in keys if not isinstance(key, str) or not ITEM_KEY.fullmatch(key)]
    if bad:
        raise ValueError(f"item keys must be file names (letters, digits, '._+=-'), got {bad[:3]}")
    if len(set(keys)) != len(keys):
        raise ValueError(f"item keys repeat: {sorted({k for k in keys if keys.count(k) > 1})[:3]}")


def _run_item(kind, config, key, params, path: Path) -> dict:
    """{"key", "result", "seconds"} of one item, saved to `path`; the result as JSON reads it back."""
    started = time.perf_counter()
    result = kind.run_item(config, params)
    seconds = time.perf_counter() - started
    try:
        text = json_text({"key": key, "result": result, "seconds": seconds})
    except (TypeError, ValueError) as error:
        raise ValueError(f"item {key!r}: result is not JSON without NaN/inf ({error})") from error
    atomic_write_text(path, text)
    return json.loads(text)


def _prepare(out: Path, config_doc: dict, fresh: bool) -> Path:
    """items/ ready to resume from: emptied when fresh or when it holds another config's items."""
    items_dir = out / "items"
    if fresh or (read_json(out / "config.json") not in (None, config_doc)):
        shutil.rmtree(items_dir, ignore_errors=True)
    items_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "config.json", config_doc)
    return items_dir


def run_experiment(config, out_dir, *, fresh: bool = False, progress: bool = True, source: str | None = None) -> dict:
    """Run (or resume) `config` in out_dir; returns {"results": results.json's document,
    "headers", "rows", "files": [paths written], "computed": [item keys run now], "seconds"}.

    fresh: discard saved items first. source: the experiment file, for report.md's command."""
    kind = experiment_kind_of(config)
    try:
        items = list(kind.items(config))  # validates the config before any file is written
    except ConfigError as error:
        if source is None:
            raise
        field = f"{error.source}: {error.field}" if error.field else error.source
        raise ConfigError(source, field, error.problem) from error
    _check_items(items)
    out = Path(out_dir)
    config_doc = config_document(config)
    items_dir = _prepare(out, config_doc, fresh)
    started = time.perf_counter()
    results, seconds, computed = {}, {}, []
    bar = tqdm(items, desc=config.name, unit="item", file=sys.stderr, disable=not progress)
    for key, params in bar:
        bar.set_postfix_str(key, refresh=True)
        path = items_dir / f"{key}.json"
        record = read_json(path)
        if not (isinstance(record, dict) and record.get("key") == key and "result" in record):
            record = _run_item(kind, config, key, params, path)
            computed.append(key)
        results[key], seconds[key] = record["result"], record.get("seconds")
    bar.close()
    summary = kind.summarize(config, results)
    document = {
        "experiment": config.name,
        "kind": type(config).__name__,
        "config": config_doc,
        "results": summary.results,
    }
    files = [out / "results.json"]
    write_json_atomic(files[0], document)
    for filename, draw in summary.figures:
        if not (ITEM_KEY.fullmatch(filename) and filename.endswith(".png")):
            raise ValueError(f"figure names must be plain .png file names, got {filename!r}")
        draw(out / filename)
        files.append(out / filename)
    total = time.perf_counter() - started
    timings = {
        "items": seconds,
        "computed_now": computed,
        "run_seconds": total,
        "item_seconds": sum(s for s in seconds.values() if s is not None),
    }
    write_json_atomic(out / "timings.json", timings)
    atomic_write_text(out / "report.md", report_markdown(config, summary, out, source, timings))
    files += [out / "timings.json", out / "report.md"]
    return {
        "results": document,
        "headers": summary.headers,
        "rows": summary.rows,
        "files": [str(f) for f in files],
        "computed": computed,
        "seconds": total,
    }
