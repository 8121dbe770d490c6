"""SkyPilot: a plan as a SkyPilot task (YAML) whose run line launches Megatron-LM, torchtitan or
MaxText on the plan's GPU nodes.

Field names checked against skypilot-org/skypilot's master documentation as stored for this
project: `docs/source/reference/yaml-spec.rst` (`num_nodes`; `resources.infra`, whose schema is
`<cloud>/<region>/<zone>`, where the v0.9.1 documentation had `cloud:` and `region:`;
`resources.accelerators` as `<name>:<count>` a node) and `docs/source/running-jobs/environment-variables.rst`
(SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS one address a line, SKYPILOT_NUM_NODES,
SKYPILOT_NUM_GPUS_PER_NODE). Accelerator names are those `sky gpus list` shows
(`docs/source/compute/show-gpus-all.txt`: L4, A100, A100-80GB, H100, H200, B200); GB200 is not in
that listing and is written as "GB200". The infra comes from the type's `site` ("aws-us-east-1"
-> aws/us-east-1). TPU slices are not exported (SkyPilot runs a TPU pod slice as one node).
"""

from __future__ import annotations

from hps.executor.export.common import Export, Layout, node_layout, quoted

SOURCE = (
    "skypilot-org/skypilot master docs (docs/source/reference/yaml-spec.rst, "
    "docs/source/running-jobs/environment-variables.rst)"
)
FRAMEWORK = "SkyPilot"
FAMILIES = ("gpu",)
ACCELERATORS = {
    "l4": "L4",
    "a100-40": "A100",
    "a100-80": "A100-80GB",
    "h100": "H100",
    "h200": "H200",
    "b200": "B200",
    "gb200": "GB200",
}
"""SkyPilot's accelerator name of each catalogue GPU type."""
CLOUDS = ("aws", "gcp", "azure")
LAUNCHES = ("megatron", "torchtitan", "maxtext")
MASTER = '$(echo "$SKYPILOT_NODE_IPS" | head -n1)'
TORCHRUN = (
    "torchrun --nnodes $SKYPILOT_NUM_NODES --nproc-per-node $SKYPILOT_NUM_GPUS_PER_NODE "
    f"--node-rank $SKYPILOT_NODE_RANK --master-addr {MASTER} --master-port 29500"
)


def infra(site: str) -> str | None:
    """SkyPilot's `<cloud>/<region>` of a catalogue site ("gcp-us-east5" -> "gcp/us-east5"); None
    for a site of no cloud SkyPilot names here."""
    cloud, _, region = site.partition("-")
    return f"{cloud}/{region}" if cloud in CLOUDS and region else None


def run_script(layout: Layout, launch: str) -> str:
    """The task's `run:` script: the framework's command, with its config file written first."""
    if launch == "megatron":
        from hps.executor.export.megatron import launch_command, megatron_flags

        return launch_command(layout, megatron_flags(layout), TORCHRUN) + "\n"
    if launch == "torchtitan":
        from hps.executor.export.torchtitan import export_torchtitan

        config, command = export_torchtitan(layout).text, f"{TORCHRUN} -m torchtitan.train --job.config_file hps.toml"
        return f"cat > hps.toml <<'HPS_EOF'\n{config}HPS_EOF\n{command}\n"
    from hps.executor.export.maxtext import export_maxtext

    config = export_maxtext(layout).text
    environment = (
        f"export JAX_COORDINATOR_IP={MASTER} JAX_COORDINATOR_PORT=8476 "
        "NNODES=$SKYPILOT_NUM_NODES NODE_RANK=$SKYPILOT_NODE_RANK"
    )
    command = "python3 -m maxtext.trainers.pre_train.train hps.yml run_name=hps"
    return f"cat > hps.yml <<'HPS_EOF'\n{config}HPS_EOF\n{environment}\n{command}\n"


def skypilot_task(layout: Layout) -> dict[str, object]:
    """The task: name, num_nodes, resources (infra, accelerators) and run."""
    launch = layout.options.launch
    if launch not in LAUNCHES:
        raise layout.refuse("launch", f"must be one of {', '.join(LAUNCHES)}, got {launch!r}")
    name = layout.resource.name
    if name not in ACCELERATORS:
        problem = f"{FRAMEWORK} names no accelerator for {name!r} here; known: {', '.join(ACCELERATORS)}"
        raise layout.refuse("stages[0].type", problem)
    nodes, per_node = node_layout(layout)
    resources: dict[str, object] = {}
    where = infra(layout.resource.site)
    if where is not None:
        resources["infra"] = where
    resources["accelerators"] = f"{ACCELERATORS[name]}:{per_node}"
    return {
        "name": f"hps-{layout.shape.name}",
        "num_nodes": nodes,
        "resources": resources,
        "run": run_script(layout, launch),
    }


def export_skypilot(layout: Layout) -> Export:
    task = skypilot_task(layout)
    lines = [
        f"# hps export --to skypilot: {layout.shape.name}, {layout.devices} {layout.resource.name} = "
        f"t {layout.tp} x p {layout.pp} x d {layout.dp}, launching {layout.options.launch}",
        f"# field names checked against {SOURCE}",
        "# sky launch THIS.yaml (add setup: and file_mounts: for the framework, data and tokenizer)",
        f"name: {quoted(task['name'])}",
        f"num_nodes: {task['num_nodes']}",
        "resources:",
        *(f"  {key}: {quoted(value)}" for key, value in task["resources"].items()),
        "run: |",
        *(f"  {line}" if line else "" for line in str(task["run"]).splitlines()),
    ]
    return Export("skypilot", "\n".join(lines) + "\n", task, layout.devices, int(task["num_nodes"]), ".yaml", SOURCE)
