"""The package's shape, read from the source with `ast` (nothing is imported): no import cycle
between hps modules, imports point down the layers, no module over 400 lines, no test module
imports another, and the code and docs stand on their own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def module_files(root: Path, package: str) -> dict[str, Path]:
    """{dotted module name: file} of every .py file under root, packages named by their __init__."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def imported_names(module: str, path: Path) -> set[str]:
    """Every dotted name the file of `module` imports, anywhere (inside functions and `if`
    blocks too), relative imports made absolute; `from X import y` gives X.y, which resolve()
    cuts back to X when y is not a module (importing the submodule X.y runs X's __init__ as
    its parent package, as every import runs its parents', which this graph leaves out)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                parts = package.split(".")
                source = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            names.update(source if alias.name == "*" else f"{source}.{alias.name}" for alias in node.names)
    return names


def resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of `modules` that `name` is or lies in (a.b.f -> a.b when f is a function
    of a.b), or None when it is in none of them."""
    while name not in modules:
        if "." not in name:
            return None
        name = name.rpartition(".")[0]
    return name


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """{module: the other modules of `modules` it imports}."""
    graph = {}
    for module, path in modules.items():
        targets = {resolve(name, modules) for name in imported_names(module, path)}
        graph[module] = targets - {None, module}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle [a, b, ..., a] of the graph, or None (iterative depth-first search)."""
    done, on_path = set(), {}
    for start in sorted(graph):
        if start in done:
            continue
        path, pending = [start], [iter(sorted(graph[start]))]
        on_path[start] = 0
        while pending:
            following = next(pending[-1], None)
            if following is None:
                done.add(path[-1])
                del on_path[path.pop()]
                pending.pop()
            elif following in on_path:
                return path[on_path[following] :] + [following]
            elif following not in done:
                on_path[following] = len(path)
                path.append(following)
                pending.append(iter(sorted(graph.get(following, ()))))
    return None


HPS = module_files(REPO / "hps", "hps")
GRAPH = import_graph(HPS)


def test_the_import_reader_sees_function_level_and_relative_imports(tmp_path):
    probe = tmp_path / "env.py"
    probe.write_text(
        "from . import features\nfrom .generator import generate_instances\n"
        "def f():\n    from ..agent import policy\n    from .. import agent\n    import hps.rl.env\n"
        "    if True:\n        from hps.costmodel.schedule.cost import segment_table\n"
    )
    found = {resolve(name, HPS) for name in imported_names("hps.placement.env.env", probe)}
    assert found - {None} == {
        "hps.placement.env.features",
        "hps.placement.env.generator",
        "hps.placement.agent",
        "hps.placement.agent.policy",
        "hps.costmodel.schedule.cost",
        "hps.rl.env",
    }
    init = tmp_path / "__init__.py"
    init.write_text("from .env import PlacementEnv\n")
    assert {resolve(name, HPS) for name in imported_names("hps.placement.env", init)} == {"hps.placement.env.env"}


def test_the_cycle_finder_reports_the_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
    assert len(HPS) > 100 and sum(map(len, GRAPH.values())) > 300  # the graph really was read


def test_hps_modules_import_no_cycle():
    """No cycle between hps modules, counting imports inside functions: each module can be
    imported on its own, and the layers below never need the ones above."""
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _in(*prefixes: str):
    """Whether a module is one of `prefixes` or inside one of them (hps.* matches any part)."""
    patterns = [re.compile(re.escape(p).replace(r"\*", r"[^.]+") + r"(\.|$)") for p in prefixes]
    return lambda module: any(p.match(module) for p in patterns)


# The floors of the package, lowest first: a module imports only from its own floor or below.
FLOORS = [
    ("config", ("hps.errors", "hps.lazy", "hps.config")),
    ("data and files", ("hps.workloads", "hps.io", "hps.reference")),
    ("shared RL and the collective model", ("hps.rl", "hps.collective.model")),
    ("cost models and the plan contract", ("hps.costmodel", "hps.contract")),
    ("planners, Flax models and reports", ("hps.methods", "hps.models", "hps.report")),
    ("environments", ("hps.placement.env", "hps.collective.env")),
    ("agents", ("hps.placement.agent", "hps.collective.agent", "hps.placement", "hps.collective")),
    ("the executor", ("hps.executor",)),
    ("studies and benchmarks", ("hps.studies", "hps.bench")),
    ("the API", ("hps.api",)),
    ("the CLI", ("hps.cli", "hps")),
]


def floor_of(module: str) -> int:
    """The floor of `module`: the floor of the longest prefix that holds it."""
    best, floor = -1, None
    for number, (_, prefixes) in enumerate(FLOORS):
        for prefix in prefixes:
            if _in(prefix)(module) and len(prefix) > best:
                best, floor = len(prefix), number
    assert floor is not None, f"{module} is on no floor"
    return floor


def test_every_module_is_on_a_floor_and_imports_point_down():
    wrong = sorted(
        f"{a} ({FLOORS[floor_of(a)][0]}) imports {b} ({FLOORS[floor_of(b)][0]})"
        for a, targets in GRAPH.items()
        for b in targets
        if floor_of(b) > floor_of(a)
    )
    assert not wrong, "imports that point up:\n" + "\n".join(wrong)


ENVS = _in("hps.placement.env", "hps.collective.env", "hps.rl.env")
AGENTS = _in("hps.*.agent")
SEARCH = _in("hps.methods")

# (rule, importers, the modules they must not import), beside the floors
RULES = [
    ("the cost models and simulator use no env, agent or planner", _in("hps.costmodel", "hps.collective.model"),
     lambda m: ENVS(m) or AGENTS(m) or SEARCH(m)),
    ("environments use no agent", ENVS, AGENTS),
    ("the executor uses no agent and no RL", _in("hps.executor"), lambda m: AGENTS(m) or _in("hps.rl")(m)),
    ("only the CLI imports the CLI", lambda m: not _in("hps.cli")(m), _in("hps.cli")),
    ("shared RL knows no problem", _in("hps.rl"), _in("hps.placement", "hps.collective", "hps.costmodel")),
    ("the collective wing knows no placement", _in("hps.collective"),
     _in("hps.placement", "hps.costmodel", "hps.methods")),
]  # fmt: skip


@pytest.mark.parametrize("rule, importers, forbidden", RULES, ids=[r[0] for r in RULES])
def test_imports_point_down(rule, importers, forbidden):
    wrong = sorted(f"{a} imports {b}" for a, targets in GRAPH.items() if importers(a) for b in targets if forbidden(b))
    assert not wrong, f"{rule}:\n" + "\n".join(wrong)


def test_nothing_in_hps_imports_the_tests():
    wrong = sorted(
        f"{module} imports {name}"
        for module, path in HPS.items()
        for name in imported_names(module, path)
        if name == "tests" or name.startswith("tests.")
    )
    assert not wrong, "\n".join(wrong)


def test_no_module_in_hps_is_over_400_lines():
    lengths = {path.relative_to(REPO): len(path.read_text().splitlines()) for path in HPS.values()}
    assert not {path: n for path, n in lengths.items() if n > MAX_LINES}


def test_no_test_module_imports_another():
    """Shared fixtures live in conftest.py and shared helpers in plain modules (helpers.py,
    instances.py); no test_*.py module and no conftest.py is imported."""
    tests = module_files(REPO / "tests", "tests")

    def is_test_module(name: str | None) -> bool:
        last = (name or "").rpartition(".")[2]
        return last.startswith("test_") or last == "conftest"

    wrong = sorted(
        f"{module} imports {name}"
        for module, path in tests.items()
        for name in imported_names(module, path)
        if is_test_module(resolve(name, tests)) or is_test_module(name.partition(".")[0])
    )
    assert not wrong, "\n".join(wrong)


def test_the_code_and_docs_do_not_refer_to_an_outside_spec():
    """The project documents itself: hps/, docs/ and README.md never point at an outside spec."""
    files = [REPO / "README.md", *HPS.values(), *(REPO / "docs").rglob("*.md")]
    word = re.compile(r"\b[S]PEC\b")  # the bracket keeps this file itself free of the word
    wrong = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if word.search(line)
    ]
    assert not wrong, "\n".join(wrong)
