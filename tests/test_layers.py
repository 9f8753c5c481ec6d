"""The package's imports go one way: from the CLI down to the compiled kernels.

Every ``import`` inside ``bsvm_scale/`` (module level or inside a function)
must name a module of its own layer's subpackage or of a lower layer; two
subpackages of the same layer (models and baselines; storage and datasets)
do not import each other. The package root is the public API: storage looks
estimator classes up through it by name, which is not an import of a layer.
"""

import ast
from pathlib import Path

import pytest

import bsvm_scale

PACKAGE = Path(bsvm_scale.__file__).parent
#: the layers, top first; one entry per subpackage or top-level module
LAYERS = [
    ("cli",),
    ("pipeline",),
    ("models", "baselines"),
    ("storage", "datasets"),
    ("inference",),
    ("optimization",),
    ("_compiled",),
    ("_util",),
    ("tables",),
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def _unit(module):
    """The layer unit of a dotted module name inside the package (None: the root)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imports(path, package):
    """Absolute names of the package modules ``path`` imports."""
    rel = path.relative_to(package.parent).with_suffix("")
    here = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
                names = [mod + "." + a.name for a in node.names] if not node.module else [mod]
            else:
                names = [node.module] if node.module else []
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        yield from (n for n in names if n == "bsvm_scale" or n.startswith("bsvm_scale."))


def _violations(package=PACKAGE):
    bad = []
    for path in sorted(package.rglob("*.py")):
        unit = _unit(".".join(path.relative_to(package.parent).with_suffix("").parts))
        if unit is None or unit == "__init__":
            continue
        for target in _imports(path, package):
            other = _unit(target)
            if other is None or other == unit or other not in RANK:
                continue
            if RANK[other] <= RANK[unit]:
                bad.append(f"{path.relative_to(package)} imports {target}")
    return bad


def test_every_module_belongs_to_a_layer():
    units = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert units == set(RANK)


def test_imports_go_down_the_layers():
    assert _violations() == []


@pytest.mark.parametrize("unit, target", [("_compiled", "bsvm_scale.inference.covariance"),
                                          ("models", "bsvm_scale.baselines.svm")])
def test_an_upward_or_sideways_import_is_caught(tmp_path, unit, target):
    """The check itself: a module that imports upwards or sideways is reported,
    relative imports included."""
    package = tmp_path / "bsvm_scale"
    (package / unit).mkdir(parents=True)
    (package / unit / "probe.py").write_text(f"import {target}\n")
    relative = target.replace("bsvm_scale.", "..", 1)
    module, name = relative.rsplit(".", 1)
    (package / unit / "probe2.py").write_text(f"from {module} import {name}\n")
    assert _violations(package) == [f"{unit}/probe.py imports {target}",
                                    f"{unit}/probe2.py imports {target.rsplit('.', 1)[0]}"]


def _module_graph(package=PACKAGE):
    """``{module: {modules of the same subpackage it imports}}`` (module-level and
    function-level imports alike; a package's ``__init__`` is left out: it is the
    subpackage's public face, importing from its own modules)."""
    graph = {}
    for path in sorted(package.rglob("*.py")):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        if path.stem == "__init__":
            continue
        unit = _unit(name)
        deps = set()
        for target in _imports(path, package):
            if _unit(target) == unit and target != name:
                deps.add(target)
        graph[name] = deps
    return graph


def _cycle(graph):
    """One import circle of ``graph`` (a list of modules), or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if d not in graph:  # a name inside a module, not a module
                continue
            if state.get(d) == 1:
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def test_no_import_circle_inside_a_layer():
    assert _cycle(_module_graph()) is None


def test_the_circle_check_finds_a_circle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: the rooms of pipeline/, top first: imports go down this list only
PIPELINE_ROOMS = ["run", "outputs", "spec"]


def _room_violations(package=PACKAGE):
    """Imports between the rooms of ``pipeline/`` that go up or sideways."""
    rank = {room: k for k, room in enumerate(PIPELINE_ROOMS)}
    bad = []
    for path in sorted((package / "pipeline").rglob("*.py")):
        parts = path.relative_to(package).parts
        if len(parts) < 3:  # pipeline/__init__.py: the public face
            continue
        here = parts[1]
        for target in _imports(path, package):
            t = target.split(".")
            if len(t) > 2 and t[1] == "pipeline" and t[2] in rank and t[2] != here \
                    and rank[t[2]] <= rank[here]:
                bad.append(f"{'/'.join(parts)} imports {target}")
    return bad


def test_every_pipeline_module_is_in_a_room():
    loose = [p.name for p in (PACKAGE / "pipeline").glob("*.py") if p.name != "__init__.py"]
    rooms = {p.name for p in (PACKAGE / "pipeline").iterdir() if (p / "__init__.py").is_file()}
    assert loose == [] and rooms == set(PIPELINE_ROOMS)


def test_pipeline_rooms_import_downwards():
    assert _room_violations() == []


def test_the_room_check_finds_an_upward_import(tmp_path):
    package = tmp_path / "bsvm_scale"
    (package / "pipeline" / "spec").mkdir(parents=True)
    (package / "pipeline" / "spec" / "probe.py").write_text(
        "from ..run.tasks import run_task\n")
    assert _room_violations(package) == [
        "pipeline/spec/probe.py imports bsvm_scale.pipeline.run.tasks"]
