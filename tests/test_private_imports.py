"""No module of the package reaches into another module's private names (issue 24).

A private name (``_x``) used from another module is a missing public seam: the one module
that may change it freely no longer can.  The scan reads every module of ``diffcompare/``
(tests are not scanned) and finds

- ``from X import _x`` (a private name or private module of another module), and
- ``X._x`` where ``X`` is a name bound by importing something of the package (a module, a
  class: ``autograd._execute``, ``Tensor._make``).

It does not see private attributes of instances (``t._requires_grad``): without types, an
attribute of a value cannot be told from one of the module's own objects.

Each use the scan finds must be in ``ALLOWED``, with the modules allowed to use it and why.
A new one fails here: give the name a public name and a docstring (and update every user),
move the code to the module that needs it, or -- for internals that stay private to the
engine, as PyTorch's stay private to ``torch`` -- add it to ``ALLOWED`` with its reason.
"""
from __future__ import annotations

import ast
import pathlib
import textwrap

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: ``"owner._name"`` (``owner``: the last part of the module or class it belongs to) ->
#: (the package whose modules may use it, why it stays private)
ALLOWED = {
    "Tensor._make": (
        "diffcompare.engine",
        "the engine's unchecked fast constructor (no copy, no dtype conversion, no "
        "validation), called by every op on the hot path; a user makes tensors with "
        "Tensor(...) / tensor(...), as PyTorch keeps its fast paths out of the public API"),
    "engine._tensor_str": (
        "diffcompare.engine",
        "PyTorch's own name for the module of its printing rules (torch/_tensor_str.py), "
        "which torch's Tensor also imports; methods.py installs its repr on Tensor"),
}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _module_name(path: pathlib.Path, root: pathlib.Path) -> tuple:
    parts = list(path.relative_to(root).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


def _resolve(module: str, is_package: bool, level: int, name: str | None) -> str:
    """The absolute module of ``from <level dots><name> import ...`` written in ``module``."""
    if level == 0:
        return name or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def private_uses(root: pathlib.Path, package: str = "diffcompare") -> list:
    """``(using module, owner, private name)`` for every use of another module's private
    name inside ``root/package`` (see the module's docstring), each once per module."""
    found = set()
    for path in sorted((root / package).rglob("*.py")):
        module, is_package = _module_name(path, root)
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        bound = {}      # local name -> the absolute dotted name it was imported as
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(module, is_package, node.level, node.module)
                if source.split(".")[0] != package:
                    continue
                for alias in node.names:
                    if _is_private(alias.name) and source != module:
                        found.add((module, source, alias.name))
                    bound[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == package:
                        local = alias.asname or alias.name.split(".")[0]
                        bound[local] = alias.name if alias.asname else local
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            chain, value = [], node.value
            while isinstance(value, ast.Attribute):
                chain.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id in bound:
                owner = ".".join([bound[value.id]] + chain[::-1])
                if owner != module:
                    found.add((module, owner, node.attr))
    return sorted(found)


def _key(owner: str, name: str) -> str:
    return f"{owner.rsplit('.', 1)[-1]}.{name}"


def test_no_module_uses_another_modules_private_names():
    uses = private_uses(ROOT)
    bad = [f"{module} uses {owner}.{name}" for module, owner, name in uses
           if _key(owner, name) not in ALLOWED
           or not (module + ".").startswith(ALLOWED[_key(owner, name)][0] + ".")]
    assert not bad, (
        "private names used across modules (a missing public seam):\n  " + "\n  ".join(bad)
        + "\nGive each a public name and a docstring (updating every user), or move the code "
        "to where it is used; an engine internal that stays private goes in ALLOWED in "
        "tests/test_private_imports.py with its reason.")


def test_every_allowed_exception_is_still_used():
    used = {_key(owner, name) for _, owner, name in private_uses(ROOT)}
    assert set(ALLOWED) <= used, f"no longer used, drop from ALLOWED: {set(ALLOWED) - used}"


def test_the_scan_finds_each_kind_of_use(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_hidden.py").write_text("")
    (pkg / "core.py").write_text(textwrap.dedent("""
        class Thing:
            @classmethod
            def _fast(cls): ...
        def _helper(): ...
        _CONST = 1
        def public(): return _helper()   # its own private name: fine
    """))
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "user.py").write_text(textwrap.dedent("""
        from .. import _hidden, core
        from ..core import Thing, _CONST, public
        import pkg.core as c

        def f():
            from pkg.core import _helper
            return core._helper(), Thing._fast(), c._CONST, public.__name__, _hidden
    """))
    assert private_uses(tmp_path, "pkg") == [
        ("pkg.sub.user", "pkg", "_hidden"),
        ("pkg.sub.user", "pkg.core", "_CONST"),
        ("pkg.sub.user", "pkg.core", "_helper"),
        ("pkg.sub.user", "pkg.core.Thing", "_fast"),
    ]

