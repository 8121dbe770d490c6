"""Run folders: the folders `hps train`, `hps run`, `hps quickstart` (and `hps execute --out`,
for its one file) write into, held by one lock, described by one manifest, checked before work.

- `lock`: the flock on `<folder>/.lock`, refusing a second writer with RunFolderBusy;
- `owned`: the files hps owns in a run folder, opened without following symbolic links;
- `preflight`: writability and free space, checked before any work;
- `manifest`: `manifest.json`, which run (command, arguments, run id) wrote each output;
- `folder`: all of them around one run (`run_folder`);
- `stop`: SIGTERM and SIGHUP handled as SIGINT, deferred while an output and its record are written.
"""
