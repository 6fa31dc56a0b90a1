"""The engine's modules import one another in one direction: no import circle.

``tensor.py`` is what a tensor is and imports no op; the ops build on it; the
operator surface (``methods.py``) sits above both.  Read from the source with
``ast``, every import (also inside functions) counts.
"""
import ast
import pathlib

import diffcompare.engine as E
from diffcompare.engine import Tensor

ENGINE = pathlib.Path(E.__file__).parent
VIEWS = {"graph", "graph_layout"}   # the drawing tools, moving to their own package


def _module_name(path):
    parts = path.relative_to(ENGINE).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__") or "__init__"


def _resolve(package, level, target):
    """The engine module an import names, as a dotted name inside the engine (None
    outside it); ``package`` is the importing file's folder, as parts."""
    if level == 0:
        prefix = "diffcompare.engine"
        if target is None or not target.startswith(prefix):
            return None
        return target[len(prefix) + 1:] or "__init__"
    base = package[:len(package) - (level - 1)]
    return ".".join(base + (target.split(".") if target else [])) or "__init__"


def _exists(name):
    where = ENGINE / name.replace(".", "/")
    return where.with_suffix(".py").exists() or where.is_dir()


def _imports():
    graph = {}
    for path in ENGINE.rglob("*.py"):
        module = _module_name(path)
        if module in VIEWS:
            continue
        package = list(path.relative_to(ENGINE).parent.parts)
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(package, node.level, node.module)
                if base is None:
                    continue
                for alias in node.names:   # `from . import ops` names a module
                    sub = f"{base}.{alias.name}" if base != "__init__" else alias.name
                    deps.add(sub if _exists(sub) else base)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    dep = _resolve(package, 0, alias.name)
                    if dep is not None:
                        deps.add(dep)
        graph[module] = {d for d in deps if d != module and d not in VIEWS}
    return graph


def _cycle(graph):
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path + [node, nxt]
            if nxt not in state:
                found = visit(nxt, path + [node])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [])
            if found:
                return found
    return None


def test_engine_modules_import_without_a_circle():
    graph = _imports()
    assert {"tensor", "function", "autograd", "methods", "ops", "ops.dual"} <= set(graph)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))


def test_tensor_module_imports_no_op_and_ops_never_import_the_surface():
    graph = _imports()
    assert graph["tensor"] <= {"grad_mode"}
    assert graph["function"] <= {"grad_mode", "tensor"}
    for module, deps in graph.items():
        if module.startswith("ops"):
            assert not deps & {"methods", "autograd", "array_api", "functional"}, module


def test_every_table_entry_became_a_tensor_method():
    from diffcompare.engine import methods

    names = ([f"__{n}__" for n in methods.BINARY] + [f"__r{n}__" for n in methods.BINARY]
             + list(methods.UNARY) + list(methods.REDUCTIONS)
             + [f"__{n}__" for n in methods.COMPARISONS] + list(methods.SAME_AS_FUNCTION))
    missing = [n for n in names if n not in vars(Tensor)]
    assert missing == []
    t = Tensor([1.0, -2.0])
    assert (t < 0).data.tolist() == [False, True] and hash(t) == hash(t)
