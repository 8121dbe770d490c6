"""`run_experiment`: a config's items, each saved as it finishes (so a killed run resumes where
it stopped), then the kind's summary as results.json, figures and report.md.

Run folder (out_dir):
    config.json        the config the items belong to (items of another config are discarded)
    items/<key>.json   one finished item: {"key", "result", "seconds"}
    results.json       {"experiment", "kind", "config", "results"}: deterministic, sorted keys;
                       removed with the items when they are discarded (--fresh, another config)
    timings.json       seconds per item and in all (kept out of results.json)
    *.png, report.md   the kind's figures and the report
    manifest.json      the runs of this folder and the run id that wrote each file (hps.io.runfolder)
Every file is written through a temporary file and a rename, and recorded in the manifest in the
same `stop.deferred` block. The folder is held for the whole run (`hps.io.runfolder.folder.run_folder`):
a second run into it is refused with RunFolderBusy naming the first, before it touches a file.
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
from hps.io.runfolder import stop
from hps.io.runfolder.folder import RunFolder, run_folder
from hps.io.runfolder.owned import refuse_links
from hps.studies.base import ITEM_KEY, experiment_kind_of
from hps.studies.files import json_text, read_json
from hps.studies.report import report_markdown


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


def _write(folder: RunFolder, path: Path, text: str) -> None:
    """`text` into `path` of the run folder, recorded as this run's output."""
    with stop.deferred():
        atomic_write_text(path, text)
        folder.wrote(path)


def _run_item(kind, config, key, params, path: Path, folder: RunFolder) -> dict:
    """{"key", "result", "seconds"} of one item, saved to `path`; the result as JSON reads it back."""
    started = time.perf_counter()
    result = kind.run_item(config, params)
    seconds = time.perf_counter() - started
    try:
        text = json_text({"key": key, "result": result, "seconds": seconds})
    except (TypeError, ValueError) as error:
        raise ValueError(f"item {key!r}: result is not JSON without NaN/inf ({error})") from error
    _write(folder, path, text)
    return json.loads(text)


SUMMARY_FILES = ("results.json", "timings.json", "report.md")
"""The files a finished run writes from its items: removed with the items they summarize."""


def _prepare(out: Path, config_doc: dict, fresh: bool, folder: RunFolder) -> Path:
    """items/ ready to resume from: emptied when fresh or when it holds another config's items,
    and then the old run's SUMMARY_FILES removed with them (in the same `stop.deferred` block,
    before any new item), so a run stopped early never leaves a results.json of other items."""
    items_dir = out / "items"
    refuse_links(out, ("items", "config.json", "results.json"))
    if items_dir.exists() and not items_dir.is_dir():
        raise ConfigError(str(items_dir), "", "is not a folder; hps keeps a run's finished items there")
    if fresh or (read_json(out / "config.json") not in (None, config_doc)):
        with stop.deferred():
            gone = list(items_dir.glob("*.json")) if items_dir.is_dir() else []
            shutil.rmtree(items_dir, ignore_errors=True)
            for path in (out / name for name in SUMMARY_FILES):
                if path.is_file() or path.is_symlink():
                    path.unlink()
                    gone.append(path)
            if folder.manifest is not None:
                folder.manifest.forget(*gone)
    items_dir.mkdir(parents=True, exist_ok=True)
    folder.wrote(items_dir)  # the folder of every run's items, this run's now (a resume adds to it)
    _write(folder, out / "config.json", json_text(config_doc))
    return items_dir


def run_experiment(
    config,
    out_dir,
    *,
    fresh: bool = False,
    progress: bool = True,
    source: str | None = None,
    command: list[str] | None = None,
) -> dict:
    """Run (or resume) `config` in out_dir; returns {"results": results.json's document,
    "headers", "rows", "files": [paths written], "computed": [item keys run now], "seconds"}.

    fresh: discard saved items first. source: the experiment file, for report.md's command.
    command: the argv the manifest records ("hps" first; default this process's). RunFolderBusy
    when another run holds out_dir; CannotWrite when it cannot be written or lacks free space."""
    kind = experiment_kind_of(config)
    try:
        items = list(kind.items(config))  # validates the config before any file is written
    except ConfigError as error:
        if source is None:
            raise
        field = f"{error.source}: {error.field}" if error.field else error.source
        raise ConfigError(source, field, error.problem) from error
    _check_items(items)
    with run_folder(out_dir, command) as folder:
        return _run(kind, config, items, folder, fresh=fresh, progress=progress, source=source)


def _run(kind, config, items, folder: RunFolder, *, fresh, progress, source) -> dict:
    """run_experiment's work in the held run folder."""
    out = folder.path
    config_doc = config_document(config)
    items_dir = _prepare(out, config_doc, fresh, folder)
    started = time.perf_counter()
    results, seconds, computed = {}, {}, []
    bar = tqdm(items, desc=config.name, unit="item", file=sys.stderr, disable=not progress)
    for key, params in bar:
        bar.set_postfix_str(key, refresh=True)
        path = items_dir / f"{key}.json"
        record = read_json(path)
        if not (isinstance(record, dict) and record.get("key") == key and "result" in record):
            record = _run_item(kind, config, key, params, path, folder)
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
    _write(folder, files[0], json_text(document))
    for filename, draw in summary.figures:
        if not (ITEM_KEY.fullmatch(filename) and filename.endswith(".png")):
            raise ValueError(f"figure names must be plain .png file names, got {filename!r}")
        with stop.deferred():
            draw(out / filename)
            folder.wrote(out / filename)
        files.append(out / filename)
    total = time.perf_counter() - started
    timings = {
        "items": seconds,
        "computed_now": computed,
        "run_seconds": total,
        "item_seconds": sum(s for s in seconds.values() if s is not None),
    }
    _write(folder, out / "timings.json", json_text(timings))
    _write(folder, out / "report.md", report_markdown(config, summary, out, source, timings))
    files += [out / "timings.json", out / "report.md"]
    return {
        "results": document,
        "headers": summary.headers,
        "rows": summary.rows,
        "files": [str(f) for f in files],
        "computed": computed,
        "seconds": total,
    }
