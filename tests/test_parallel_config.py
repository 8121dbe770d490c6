"""Parallel-plan configuration: sites, tensor-parallel limits and links in catalogues, the parallel
keys of workloads and jobs, and plan files (hps-plan/2): loading, errors naming file and field,
and round trips."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import os
import tomllib
from pathlib import Path

import pytest

from hps import ConfigError
from hps.config.loaders import load_catalog, load_workload, parse_catalog, parse_workload, write_workload
from hps.config.paths import resolve_topology
from hps.config.planfile import check_plan_against, plan_file_json, read_plan_file, write_plan_file
from hps.config.types import Job, JobDefaults, Layer, MeasuredTime, ParallelStage, PlanFile, Workload
from hps.config.validation import check_parallel_job, validate_job

GIB = 2**30


def resource(name: str, site: str | None = None, extra: str = "", size: int = 8) -> str:
    """A [[resource]] table with one network dimension of `size` devices."""
    site_line = f'site = "{site}"\n' if site is not None else ""
    return f"""
[[resource]]
name = "{name}"
kind = "gpu"
{site_line}{extra}peak_TFLOPs = 100.0
efficiency_dense = 0.4
efficiency_sparse = 0.02
mem_bw_GiBps = 1000.0
io_bw_GiBps = 0.25
nic_bw_GiBps = 5.0
memory_GiB = 32.0
price_per_hour = 3.0
max_units = {size}
  [[resource.dimension]]
  size = {size}
  bandwidth_GiBps = 100.0
  latency_ns = 1000.0
  algorithm = "switch"
"""


def link(a: str = "A", b: str = "B", **values) -> str:
    fields = {"bandwidth_GiBps": 10.0, "latency_ns": 2.0e6, "dollars_per_GiB": 0.12, **values}
    body = "".join(f"{key} = {value}\n" for key, value in fields.items() if value is not None)
    return f'\n[[link]]\nsites = ["{a}", "{b}"]\n{body}'


TWO_SITES = 'name = "two"\n' + resource("g1", "A") + resource("g2", "B", "tp_max = 4\n")


def catalog_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_catalog(tomllib.loads(text), "cat.toml")
    return info.value


# ---------------------------------------------------------------- catalogues


def test_sites_tp_max_and_links_load_in_internal_units():
    catalog = parse_catalog(tomllib.loads(TWO_SITES + link(dollars_per_GiB=0.5)), "cat.toml")
    g1, g2 = catalog.resources
    assert (g1.site, g1.tp_max, g1.tensor_parallel_limit) == ("A", 0, 8)
    assert (g2.site, g2.tp_max, g2.tensor_parallel_limit) == ("B", 4, 4)
    (only,) = catalog.links
    assert only.sites == ("A", "B")
    assert only.bandwidth == 10.0 * GIB and only.latency == pytest.approx(2e-3)
    assert only.dollars_per_byte == 0.5 / GIB
    assert catalog.link("B", "A") is only and catalog.link("A", "C") is None


def test_a_catalogue_without_sites_is_one_unnamed_site():
    catalog = parse_catalog(tomllib.loads('name = "x"\n' + resource("g")), "cat.toml")
    assert catalog.resources[0].site == "" and catalog.links == ()


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ('name = "x"\n' + resource("g", extra="tp_max = 6\n"), "resource[0].tp_max", "power of two"),
        ('name = "x"\n' + resource("g", extra="tp_max = 0\n"), "resource[0].tp_max", ">= 1"),
        ('name = "x"\n' + resource("g", extra="tp_max = 16\n"), "resource[0].tp_max", "network size 8"),
        ('name = "x"\n' + resource("g", extra="tp_max = 2.0\n"), "resource[0].tp_max", "integer"),
        ('name = "x"\n' + resource("g", site=""), "resource[0].site", "empty"),
        ('name = "x"\n' + resource("g", extra="site = 3\n"), "resource[0].site", "string"),
        (TWO_SITES + link(dollars_per_GiB=-0.01), "link[0].dollars_per_GiB", "cannot be negative"),
        (TWO_SITES + link(bandwidth_GiBps=0), "link[0].bandwidth_GiBps", "> 0"),
        (TWO_SITES + link(latency_ns=-1), "link[0].latency_ns", ">= 0"),
        (TWO_SITES + link(latency_ns=None), "link[0].latency_ns", "missing"),
        (TWO_SITES + link(price=1), "link[0].price", "unknown key"),
        (TWO_SITES + link("A", "Mars"), "link[0].sites[1]",
         "unknown site 'Mars'; the resource types' sites are 'A', 'B'"),
        (TWO_SITES + link("A", "A"), "link[0].sites", "two different sites"),
        (TWO_SITES + '\n[[link]]\nsites = ["A"]\nbandwidth_GiBps = 1\nlatency_ns = 0\ndollars_per_GiB = 0\n',
         "link[0].sites", "exactly two"),
        (TWO_SITES + link() + link("B", "A"), "link[1].sites", "a second link between 'B' and 'A' (also link[0])"),
        ('name = "x"\n' + resource("g") + link("A", "B"), "link[0].sites[0]", "no [[resource]] sets site"),
        ('name = "x"\n' + resource("g", extra="matmul_efficiency_max = 1.5\n"), "resource[0].matmul_efficiency_max",
         "(0, 1]"),
        ('name = "x"\n' + resource("g", extra="fp8_matmul_efficiency_max = 0.4\n"),
         "resource[0].fp8_matmul_efficiency_max", "give fp8_peak_TFLOPs too"),
        ('name = "x"\n' + resource("g", extra="fp8_peak_TFLOPs = 0\n"), "resource[0].fp8_peak_TFLOPs", "> 0"),
        ('name = "x"\n' + resource("g", extra="matmul_half_work_TFLOP = -1\n"), "resource[0].matmul_half_work_TFLOP",
         ">= 0"),
        ('name = "x"\n' + resource("g", extra="tp_comm_exposed = 1.5\n"), "resource[0].tp_comm_exposed",
         "between 0 and 1"),
        ('name = "x"\n' + resource("g", extra='tp_comm_exposed = "all"\n'), "resource[0].tp_comm_exposed", "number"),
        ('name = "x"\n' + resource("g", extra="matmul_efficiency = 0.5\n"), "resource[0].matmul_efficiency",
         "unknown key"),
    ],
)  # fmt: skip
def test_catalogue_errors_name_file_and_field(text, field, words):
    error = catalog_error(text)
    assert error.source == "cat.toml" and error.field == field
    assert words in error.problem, error.problem


def test_kernel_clock_constants_load_in_internal_units_and_are_optional():
    extra = (
        "matmul_efficiency_max = 0.7\nfp8_matmul_efficiency_max = 0.5\nmatmul_half_work_TFLOP = 0.25\n"
        "fp8_peak_TFLOPs = 200.0\ntp_comm_exposed = 0.0\n"
    )
    catalog = parse_catalog(tomllib.loads('name = "x"\n' + resource("g", extra=extra) + resource("h")), "cat.toml")
    g, h = catalog.resources
    assert (g.matmul_efficiency_max, g.fp8_matmul_efficiency_max, g.tp_comm_exposed) == (0.7, 0.5, 0.0)
    assert g.matmul_half_work_flop == 0.25e12 and g.fp8_peak_flops == 200e12
    assert (h.matmul_efficiency_max, h.fp8_matmul_efficiency_max, h.matmul_half_work_flop) == (None, None, None)
    assert (h.fp8_peak_flops, h.tp_comm_exposed) == (None, None)


def test_cloud_2026_has_sites_and_links_between_them():
    catalog = load_catalog(resolve_topology("cloud-2026", "catalogs", "--catalog"))
    sites = {r.site for r in catalog.resources}
    assert sites == {"aws-us-east-1", "gcp-us-east5", "azure-eastus"}
    assert all(r.site for r in catalog.resources)
    for site_link in catalog.links:
        assert set(site_link.sites) <= sites
        assert site_link.bandwidth > 0 and site_link.latency > 0 and site_link.dollars_per_byte > 0
    pairs = [frozenset(x.sites) for x in catalog.links]
    assert len(pairs) == len(set(pairs)) == 3  # every pair of the three sites, once
    assert catalog.link("aws-us-east-1", "gcp-us-east5").dollars_per_byte * GIB == pytest.approx(0.12)
    aws_azure = catalog.link("azure-eastus", "aws-us-east-1").dollars_per_byte * GIB
    assert aws_azure == pytest.approx(0.09 * GIB / 1e9, rel=1e-5)  # AWS $0.09/GB, the larger of the two
    assert {r.name: r.site for r in catalog.resources}["tpu-v5p"] == "gcp-us-east5"


@pytest.mark.parametrize("name", ["cloud-2024", "small"])
def test_older_catalogues_are_one_site(name):
    catalog = load_catalog(resolve_topology(name, "catalogs", "--catalog"))
    assert {r.site for r in catalog.resources} == {""} and catalog.links == ()


# ---------------------------------------------------------------- workloads

LAYER = """
[[layer]]
name = "{name}"
kind = "dense"
flops = 1000.0
mem_bytes = 200.0
io_bytes = 0.0
act_bytes = 64.0
dense_param_bytes = 4096.0
sparse_param_bytes = 0.0
"""
MEASURED = '\n[[layer.measured]]\ntype = "h100"\ntp = {tp}\nmicro_batch = {mb}\nforward_s = 0.002\nbackward_s = 0.004\n'
DEFAULTS = "\n[defaults]\nbatch = 64\nthroughput = 10.0\nsamples = 1e6\n"


def workload_error(text: str) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_workload(tomllib.loads('name = "w"\n' + text), "w.toml")
    return info.value


def full_workload() -> Workload:
    measured = (MeasuredTime("h100", 8, 4, 0.0021, 0.0043), MeasuredTime("h100", 4, 4, 0.004, 0.008))
    layers = (
        Layer("attn", "dense", 1e9, 2e6, 0.0, 4e4, 4e6, 0.0, {"h100": 1e-4}, cut_after=False, stash_bytes=1.5e5,
              tp_comm_bytes=8e4, tp_collectives=2, measured=measured, serial_mem_bytes=5e5),
        Layer("mlp", "dense", 2e9, 3e6, 1.0, 4e4, 8e6, 0.0, stash_bytes=0.0, tp_collectives=0),
    )  # fmt: skip
    defaults = JobDefaults(batch=1536.0, throughput=60.0, samples=1.46e8, micro_batch=12.0, precision="bf16-adam",
                           zero=1, recompute="full")  # fmt: skip
    return Workload("w", layers, defaults, "every parallel key")


def test_workload_with_every_parallel_key_round_trips(tmp_path):
    workload = full_workload()
    write_workload(workload, tmp_path / "w.toml")
    assert load_workload(tmp_path / "w.toml") == workload


def test_parallel_keys_default_when_absent():
    workload = parse_workload(tomllib.loads('name = "w"\n' + LAYER.format(name="a") + DEFAULTS), "w.toml")
    layer, defaults = workload.layers[0], workload.defaults
    assert (layer.cut_after, layer.stash, layer.tp_bytes, layer.tp_collectives, layer.measured) == (
        True, 64.0, 64.0, 1, ())  # fmt: skip
    assert (defaults.micro_batch, defaults.precision, defaults.zero, defaults.recompute) == (
        None, "fp32-adam", 0, "none")  # fmt: skip


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ("cut_after = 1\n", "layer[0].cut_after", "true or false"),
        ("stash_bytes = -1.0\n", "layer[0].stash_bytes", ">= 0"),
        ("tp_comm_bytes = 'x'\n", "layer[0].tp_comm_bytes", "number"),
        ("tp_collectives = -1\n", "layer[0].tp_collectives", ">= 0"),
        ("serial_mem_bytes = -1.0\n", "layer[0].serial_mem_bytes", ">= 0"),
        ("serial_mem_bytes = 300.0\n", "layer[0].serial_mem_bytes", "at most mem_bytes"),
        ("tp_collectives = 1.5\n", "layer[0].tp_collectives", "integer"),
        (MEASURED.format(tp=3, mb=4), "layer[0].measured[0].tp", "power of two"),
        (MEASURED.format(tp=8, mb=0), "layer[0].measured[0].micro_batch", ">= 1"),
        (MEASURED.format(tp=8, mb=4).replace("forward_s = 0.002", "forward_s = 0.0"),
         "layer[0].measured[0].forward_s", "> 0"),
        (MEASURED.format(tp=8, mb=4).replace("backward_s = 0.004\n", ""), "layer[0].measured[0].backward_s",
         "missing"),
        (MEASURED.format(tp=8, mb=4) + "extra = 1\n", "layer[0].measured[0].extra", "unknown key"),
        (MEASURED.format(tp=8, mb=4) + MEASURED.format(tp=8, mb=4), "layer[0].measured[1]",
         "duplicate measurement for type 'h100', tp 8, micro_batch 4 (also layer[0].measured[0])"),
    ],
)  # fmt: skip
def test_layer_errors_name_file_and_field(extra, field, words):
    error = workload_error(LAYER.format(name="a") + extra)
    assert (error.source, error.field) == ("w.toml", field)
    assert words in error.problem, error.problem


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ("micro_batch = 5\n", "defaults.micro_batch", "does not divide the batch 64"),
        ("micro_batch = 128\n", "defaults.micro_batch", "exceeds the batch 64"),
        ("micro_batch = 0\n", "defaults.micro_batch", ">= 1"),
        ("micro_batch = 8.0\n", "defaults.micro_batch", "integer"),
        ("precision = 'fp8'\n", "defaults.precision", "unknown value 'fp8'"),
        ("zero = 4\n", "defaults.zero", "0, 1, 2, 3"),
        ("zero = true\n", "defaults.zero", "integer"),
        ("recompute = 'some'\n", "defaults.recompute", "unknown value 'some'"),
    ],
)
def test_defaults_errors_name_file_and_field(extra, field, words):
    error = workload_error(LAYER.format(name="a") + DEFAULTS + extra)
    assert (error.source, error.field) == ("w.toml", field)
    assert words in error.problem, error.problem


# ---------------------------------------------------------------- jobs


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"micro_batch": 7.0}, "micro_batch", "does not divide"),
        ({"micro_batch": 128.0}, "micro_batch", "exceeds the batch"),
        ({"micro_batch": 2.5}, "micro_batch", "positive integer"),
        ({"precision": "int4"}, "precision", "unknown precision 'int4'"),
        ({"zero": 5}, "zero", "0, 1, 2, 3"),
        ({"recompute": "half"}, "recompute", "unknown recompute 'half'"),
    ],
)
def test_parallel_job_errors(changes, field, words):
    job = Job(batch=64.0, throughput=1.0, samples=1e6, **changes)
    for check in (check_parallel_job, validate_job):
        with pytest.raises(ConfigError) as info:
            check(job, "--job")
        assert (info.value.source, info.value.field) == ("--job", field)
        assert words in info.value.problem


def test_valid_parallel_jobs_pass():
    validate_job(Job(batch=64.0, throughput=1.0, samples=1e6))
    validate_job(Job(batch=64.0, throughput=1.0, samples=1e6, micro_batch=16.0, precision="bf16-adam", zero=3,
                     recompute="full"))  # fmt: skip


# ---------------------------------------------------------------- plan files

PLAN = {
    "format": "hps-plan/2",
    "workload": "gpt3-175b",
    "catalog": "cloud-2026",
    "job": {"batch": 1536, "micro_batch": 12, "throughput": 60, "samples": 1.46e8, "precision": "bf16-adam",
            "zero": 1, "recompute": "none"},
    "stages": [{"first": 0, "last": 1, "type": "g1", "tp": 8, "dp": 4},
               {"first": 2, "last": 3, "type": "g2", "tp": 4, "dp": 2}],
}  # fmt: skip


def plan_error(tmp_path: Path, data, *, raw: str | None = None) -> ConfigError:
    path = tmp_path / "plan.json"
    path.write_text(raw if raw is not None else json.dumps(data))
    with pytest.raises(ConfigError) as info:
        read_plan_file(path)
    assert info.value.source == str(path)
    return info.value


def test_plan_file_round_trips_and_has_the_exact_format(tmp_path):
    plan = read_plan_file_from(tmp_path, PLAN)
    assert plan.job == Job(batch=1536.0, throughput=60.0, samples=1.46e8, micro_batch=12.0, precision="bf16-adam",
                           zero=1, recompute="none")  # fmt: skip
    assert plan.stages[1] == ParallelStage(2, 3, "g2", 4, 2) and plan.stages[0].units == 32
    third = {**PLAN, "format": "hps-plan/3", "job": {**PLAN["job"], "virtual_stages": 1, "fp8": False,
                                                     "collective": "themis", "chunks": 64}}  # fmt: skip
    assert plan_file_json(plan) == third  # an hps-plan/2 file is written back as hps-plan/3
    write_plan_file(plan, tmp_path / "out" / "again.json")
    assert plan.version == "hps-plan/2"
    assert read_plan_file(tmp_path / "out" / "again.json") == dataclasses.replace(plan, version="hps-plan/3")
    assert json.loads((tmp_path / "out" / "again.json").read_text()) == third
    assert os.listdir(tmp_path / "out") == ["again.json"]
    chosen = {**third, "clock": "kernel", "job": {**third["job"], "virtual_stages": 2, "fp8": True,
                                                  "recompute": "selective", "memory_headroom": 0.2}}  # fmt: skip
    plan = read_plan_file_from(tmp_path, chosen)
    assert (plan.clock, plan.job.virtual_stages, plan.job.fp8, plan.job.recompute) == ("kernel", 2, True, "selective")
    assert plan.job.memory_headroom == 0.2 and plan_file_json(plan) == chosen


def test_a_plan_file_records_its_collective_and_the_data_it_was_planned_on(tmp_path):
    """hps-plan/3 records the job's collective policy and chunks, and the SHA-256 of a workload or
    catalogue file; a file changed since is refused naming the field, a name (zoo, shipped) has none."""
    from hps.config.planfile import check_recorded_data, file_sha256

    workload = tmp_path / "w.toml"
    workload.write_text("# a workload\n")
    digest = file_sha256(str(workload))
    assert digest == hashlib.sha256(b"# a workload\n").hexdigest() and file_sha256("gpt3-175b") is None
    document = {**PLAN, "format": "hps-plan/3", "workload": str(workload), "workload_sha256": digest,
                "job": {**PLAN["job"], "collective": "baseline", "chunks": 16}}  # fmt: skip
    plan = read_plan_file_from(tmp_path, document)
    assert (plan.job.collective, plan.job.chunks, plan.workload_sha256) == ("baseline", 16, digest)
    assert plan_file_json(plan)["workload_sha256"] == digest
    check_recorded_data(plan, "p.json")
    workload.write_text("# a workload, edited\n")
    with pytest.raises(ConfigError) as error:
        check_recorded_data(plan, "p.json")
    assert error.value.field == "workload_sha256" and "changed since the plan was written" in error.value.problem
    workload.unlink()
    with pytest.raises(ConfigError, match="is gone"):
        check_recorded_data(plan, "p.json")
    for key, value, words in (("workload_sha256", "abc", "64 lowercase hex"), ("catalog_sha256", 7, "64 lowercase")):
        with pytest.raises(ConfigError, match=words):
            read_plan_file_from(tmp_path, {**document, key: value})
    with pytest.raises(ConfigError, match="baseline or themis"):
        read_plan_file_from(tmp_path, {**document, "job": {**document["job"], "collective": "ring"}})


@pytest.mark.parametrize(
    "document, field, words",
    [
        ({**PLAN, "format": "hps-plan/4"}, "format", "hps-plan/2 and hps-plan/3"),
        ({**PLAN, "job": {**PLAN["job"], "recompute": "selective"}}, "job.recompute", "needs format hps-plan/3"),
        ({**PLAN, "job": {**PLAN["job"], "virtual_stages": 2}}, "job.virtual_stages", "unknown key"),
        ({**PLAN, "format": "hps-plan/3", "job": {**PLAN["job"], "virtual_stages": 0}}, "job.virtual_stages", "1 to"),
        ({**PLAN, "format": "hps-plan/3", "job": {**PLAN["job"], "memory_headroom": 1.0}}, "job.memory_headroom",
         "[0, 1)"),
        ({**PLAN, "format": "hps-plan/3", "job": {**PLAN["job"], "fp8": "yes"}}, "job.fp8", "true or false"),
        ({**PLAN, "format": "hps-plan/3", "job": {**PLAN["job"], "recompute": "some"}}, "job.recompute",
         "none, selective, full"),
        ({**PLAN, "format": "hps-plan/3", "clock": "wall"}, "clock", "kernel"),
    ],
)  # fmt: skip
def test_a_plan_file_s_schedule_choices_are_checked_naming_the_field(tmp_path, document, field, words):
    with pytest.raises(ConfigError) as error:
        read_plan_file_from(tmp_path, document)
    assert error.value.field == field and words in error.value.problem


def read_plan_file_from(tmp_path: Path, data) -> PlanFile:
    (tmp_path / "in.json").write_text(json.dumps(data))
    return read_plan_file(tmp_path / "in.json")


def edited(path: tuple, value) -> dict:
    """PLAN with the entry at `path` (keys and indices) set to `value` (DELETE: removed)."""
    data = copy.deepcopy(PLAN)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "field", "words"),
    [
        (("format",), "hps-plan/1", "format",
         "plan format 'hps-plan/1' is not supported; this hps reads hps-plan/2"),
        (("format",), DELETE, "format", "missing"),
        (("extra",), 1, "extra", "unknown key"),
        (("job", "chunks"), 4, "job.chunks", "unknown key"),
        (("stages", 0, "pp"), 4, "stages[0].pp", "unknown key"),
        (("job", "samples"), DELETE, "job.samples", "missing"),
        (("workload",), "", "workload", "non-empty string"),
        (("job", "batch"), True, "job.batch", "(boolean)"),
        (("job", "batch"), "1536", "job.batch", "(string)"),
        (("job", "throughput"), 0, "job.throughput", "> 0"),
        (("job", "samples"), -5, "job.samples", "> 0"),
        (("job", "micro_batch"), 10, "job.micro_batch", "does not divide the batch 1536"),
        (("job", "micro_batch"), 3072, "job.micro_batch", "exceeds the batch"),
        (("job", "micro_batch"), 12.0, "job.micro_batch", "integer"),
        (("job", "zero"), 4, "job.zero", "0, 1, 2, 3"),
        (("job", "precision"), "fp16", "job.precision", "unknown precision"),
        (("job", "recompute"), None, "job.recompute", "unknown recompute"),
        (("stages",), [], "stages", "non-empty array"),
        (("stages", 1, "tp"), 6, "stages[1].tp", "power of two"),
        (("stages", 1, "dp"), 0, "stages[1].dp", ">= 1"),
        (("stages", 1, "dp"), 5, "stages[1].dp", "micro-batch 12 is not divisible among 5 replicas"),
        (("stages", 0, "first"), 1, "stages[0].first", "must be layer 0"),
        (("stages", 1, "first"), 3, "stages[1].first", "stages[0].last + 1 = 2"),
        (("stages", 1, "last"), 1, "stages[1].last", "at least first (2)"),
        (("stages", 0, "type"), 7, "stages[0].type", "non-empty string"),
        (("stages", 0), [1], "stages[0]", "must be an object"),
    ],
)  # fmt: skip
def test_plan_file_errors_name_file_and_field(tmp_path, path, value, field, words):
    error = plan_error(tmp_path, edited(path, value))
    assert error.field == field
    assert words in error.problem, error.problem


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ("{not json", "not valid JSON"),
        ("[" * 40 + "]" * 40, "nested deeper than 32"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 32"),
        (json.dumps(PLAN).replace("60", "NaN"), "not valid JSON"),
        ('{"format": "hps-plan/2", "format": "hps-plan/2"}', "duplicate key 'format'"),
        ('["hps-plan/2"]', "must be an object"),
    ],
)
def test_plan_files_that_are_no_plans(tmp_path, raw, words):
    assert words in plan_error(tmp_path, None, raw=raw).problem


def test_plan_file_size_and_missing_file(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:
        handle.truncate(16 * 2**20 + 1)
    with pytest.raises(ConfigError, match="16 MiB"):
        read_plan_file(big)
    with pytest.raises(ConfigError, match="file not found"):
        read_plan_file(tmp_path / "none.json")


def test_an_invalid_plan_is_not_written(tmp_path):
    plan = read_plan_file_from(tmp_path, PLAN)
    bad = PlanFile(plan.workload, plan.catalog, plan.job, (ParallelStage(0, 3, "g1", 3, 4),))
    with pytest.raises(ConfigError) as info:
        write_plan_file(bad, tmp_path / "bad.json")
    assert (info.value.source, info.value.field) == (str(tmp_path / "bad.json"), "stages[0].tp")
    no_micro = PlanFile(plan.workload, plan.catalog, Job(batch=8.0, throughput=1.0, samples=8.0), plan.stages)
    with pytest.raises(ConfigError, match="micro-batch"):
        write_plan_file(no_micro, tmp_path / "bad.json")
    assert sorted(os.listdir(tmp_path)) == ["in.json"]


def plan_workload(n_layers: int = 4, closed: int | None = None) -> Workload:
    layers = tuple(
        Layer(f"l{i}", "dense", 1e6, 1e3, 0.0, 64.0, 4e3, 0.0, cut_after=i != closed) for i in range(n_layers)
    )
    return Workload("w", layers)


def test_plan_against_workload_and_catalogue(tmp_path):
    plan = read_plan_file_from(tmp_path, PLAN)
    catalog = parse_catalog(tomllib.loads(TWO_SITES + link()), "cat.toml")
    check_plan_against(plan, plan_workload(), catalog, "p.json")
    check_plan_against(plan, plan_workload(closed=3), catalog, "p.json")  # the last layer ends the model
    cases = [
        (edited(("stages", 1, "type"), "x"), plan_workload(), "stages[1].type",
         "unknown type 'x'; catalogue 'two' has g1, g2"),
        (edited(("stages", 1, "tp"), 8), plan_workload(), "stages[1].tp",
         "8 exceeds the tensor-parallel limit 4 of type 'g2'"),
        (PLAN, plan_workload(6), "stages[-1].last", "must be the workload's last layer 5, got 3"),
        (PLAN, plan_workload(3), "stages[1].last", "past the workload's last layer 2"),
        (PLAN, plan_workload(closed=1), "stages[0].last", "layer 1 'l1' has cut_after = false"),
    ]  # fmt: skip
    for data, workload, field, words in cases:
        with pytest.raises(ConfigError) as info:
            check_plan_against(read_plan_file_from(tmp_path, data), workload, catalog, "p.json")
        assert (info.value.source, info.value.field) == ("p.json", field)
        assert words in info.value.problem, info.value.problem
    assert math.isinf(plan.job.micro_batches)  # a plan file's job carries the micro-batch, not M
