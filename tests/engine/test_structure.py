"""The engine's modules import one another in one direction: no import circle.

``tensor.py`` is what a tensor is and imports no op; the ops build on it; the
operator surface (``methods.py``) sits above both.  Read from the source with
``ast``, every import (also inside functions) counts.
"""
import ast
import pathlib

import numpy as np
import pytest

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
    from diffcompare.engine import methods, ops

    names = [name for op in ops.OPS.values() for name in op.methods]
    names += [f"__{n}__" for n in methods.COMPARISONS]
    assert {"exp", "__neg__", "__add__", "__radd__", "__iadd__", "add_", "div_", "sum"} <= set(names)
    missing = [n for n in names if n not in vars(Tensor)]
    assert missing == []
    t = Tensor([1.0, -2.0])
    assert (t < 0).data.tolist() == [False, True] and hash(t) == hash(t)


def test_the_table_makes_the_op_functions_and_the_package_names():
    import diffcompare.engine as E
    from diffcompare.engine import ops

    assert ops.__all__ == sorted(ops.OPS)
    for name, op in ops.OPS.items():
        assert getattr(ops, name) is op.function and getattr(E, name) is op.function, name
        assert op.function.__name__ == name
        if op.kind in ("unary", "binary"):
            assert op.node is not None and op.function.__module__ == ops.__name__
    with pytest.raises(ValueError, match="registered twice"):
        ops.register(ops.exp)


def test_table_methods_record_the_table_node_with_torch_argument_order():
    from diffcompare.engine import ops

    a = Tensor([1.0, 2.0], requires_grad=True)
    for name, op in ops.OPS.items():
        if op.kind == "unary":
            for method in op.methods:
                with np.errstate(invalid="ignore", divide="ignore"):   # arcsin(2): NaN, as NumPy
                    y = getattr(a, method)()
                assert type(y.grad_fn) is op.node, (name, method)
        if op.kind == "binary" and op.node.__name__ != "Matmul":
            for method in op.methods:
                y = getattr(a.clone(), method)(3.0)
                assert type(y.grad_fn) is op.node, (name, method)   # (arctan2: Atan2Backward0)
    # reflected: the tensor first for a commuting op (PyTorch records 3 * a as a.mul(3))
    assert (3 * a).grad_fn.next_functions[1] == (None, 0)
    assert (3 - a).grad_fn.next_functions[0] == (None, 0)
    assert (3 - a).data.tolist() == [2.0, 1.0] and (6 / a).data.tolist() == [6.0, 3.0]


def test_array_namespace_offers_every_engine_name_of_the_xp_contract():
    from diffcompare.engine import array_api, ops
    from diffcompare.problems import contract

    # sigmoid, softplus and log1p the contract provides where a namespace lacks them
    own = [n for n in contract.NAMES if n not in contract.PROVIDED or n == "logsumexp"]
    missing = [n for n in own if n.split(".")[0] not in array_api.__all__
               or not contract._has_path(array_api, n)]   # linalg.det: xp.linalg's det
    assert missing == []
    assert set(array_api.__all__) <= set(dir(array_api))
    for name, op in ops.OPS.items():
        for alias in op.xp:
            assert getattr(array_api, alias) is op.function, (name, alias)
            assert alias in array_api.__doc__
    assert array_api.subtract is ops.sub and array_api.amax is ops.max
