"""``diffcompare graph FILE``: draw the autograd graph of a function in a user's file,
as the engine records it and, when torch is installed, as PyTorch does.

The file defines the function and its inputs (plain lists or NumPy arrays), written with
tensor operators and methods that both libraries have (``+ - * / @``, ``.mean()``,
``.sum()``, ``.relu()``, ``.exp()``, ``.log()``, ...)::

    inputs = {"x": [1.0, 2.0], "w": [2.0]}
    requires_grad = ["w"]           # optional; default: every input
    def f(x, w):
        return (x * w).mean()

:func:`draw_file` writes ``<function>-engine.svg`` / ``.dot`` and ``<function>-torch.svg`` /
``.dot`` and returns what it wrote; every box is named by the file's variable names.
"""
from __future__ import annotations

import inspect
import runpy
from pathlib import Path

import numpy as np


class GraphFileError(ValueError):
    """The file does not define what ``diffcompare graph`` needs; the message says what."""


def load(path, function: str | None = None):
    """``(fn, inputs, requires_grad)`` from the file at ``path``."""
    path = Path(path)
    if not path.is_file():
        raise GraphFileError(f"{path} is not a file: pass a Python file that defines a function "
                             "and an `inputs` dict")
    try:
        ns = runpy.run_path(str(path))
    except Exception as exc:
        raise GraphFileError(f"running {path} failed: {type(exc).__name__}: {exc}") from exc
    inputs = ns.get("inputs")
    if not isinstance(inputs, dict) or not inputs:
        raise GraphFileError(f"{path} defines no `inputs` dict, e.g. inputs = {{'x': [1.0, 2.0]}}")
    funcs = {k: v for k, v in ns.items() if inspect.isfunction(v) and v.__module__ == "<run_path>"}
    if function is None:
        matching = [k for k, v in funcs.items() if set(inspect.signature(v).parameters) == set(inputs)]
        if len(matching) != 1:
            raise GraphFileError(f"{path}: pass --function NAME; functions taking exactly the inputs "
                                 f"{sorted(inputs)}: {matching or 'none'}")
        function = matching[0]
    if function not in funcs:
        raise GraphFileError(f"{path} defines no function {function!r}; it defines: {sorted(funcs) or 'none'}")
    rg = ns.get("requires_grad", list(inputs))
    unknown = set(rg) - set(inputs)
    if unknown:
        raise GraphFileError(f"{path}: requires_grad names {sorted(unknown)}, which are not in inputs")
    return funcs[function], inputs, list(rg)


def build(fn, inputs: dict, requires_grad, lib):
    """Call ``fn`` on ``lib``'s tensors; return ``(output, {tensor: name})``."""
    tensors = {k: lib.tensor(np.asarray(v, dtype=np.float64), requires_grad=k in requires_grad)
               for k, v in inputs.items()}
    out = fn(**tensors)
    if not hasattr(out, "grad_fn"):
        raise GraphFileError(f"{fn.__name__} returned {type(out).__name__}, not a tensor")
    names = {t: k for k, t in tensors.items()}
    names[out] = "output"
    return out, names


def draw_file(path, out_dir, function: str | None = None, echo=print) -> list[Path]:
    """Draw the function's graph for the engine and torch (when installed) into ``out_dir``."""
    from ..engine import graph as engine_graph
    from .graph import to_dot, to_svg
    from .libs import libs

    fn, inputs, rg = load(path, function)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for lib in libs():
        try:
            out, names = build(fn, inputs, rg, lib)
        except GraphFileError:
            raise
        except Exception as exc:       # the user's code failed on this library: say so, go on
            echo(f"{lib.version}: {fn.__name__} failed: {type(exc).__name__}: {exc}")
            continue
        if lib.name == "engine":
            echo(engine_graph.summary_text(out, names=names))
        for ext, text in (("svg", to_svg(out, names=names)), ("dot", to_dot(out, names=names))):
            target = out_dir / f"{fn.__name__}-{lib.name}.{ext}"
            target.write_text(text, encoding="utf-8")
            written.append(target)
        echo(f"{lib.version}: {out_dir / (fn.__name__ + '-' + lib.name + '.svg')}")
    return written
