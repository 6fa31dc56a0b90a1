"""Every listing of a method's facts agrees with its one description (``backends.registry``):
the registry and the class, ``catalog.json``'s facts, the styles, the exact families, the
studies' accuracy classes, evaluation counts and break-even pairs, the operator table, the
namespaces and the optional extras.  A description missing a fact fails when it is made."""
from __future__ import annotations

import dataclasses
import importlib
import pathlib
import subprocess
import sys
import tomllib

import pytest

from diffcompare import backends
from diffcompare.backends import registry
from diffcompare.backends.registry import METHODS, MethodInfo
from diffcompare.backends.styles import style_of
from diffcompare.results import catalog
from diffcompare.studies import accuracy, breakeven, kinks, scaling

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(METHODS))
def test_the_class_reads_its_facts_from_its_description(name):
    method = METHODS[name]
    cls = getattr(importlib.import_module(method.module), method.class_name)
    assert cls.name == name                       # the class and its entry name each other
    b = backends.get(name)
    assert b.info is method
    assert (b.family, b.mode, b.devices, b.xp_namespace) == (
        method.family, method.mode, method.devices, method.namespace)
    assert backends.namespace_of(name) == method.namespace
    assert backends.devices_of(name) == method.devices
    # the optional library it imports is the extra it names (pyproject's optional-dependencies)
    assert (b.requires is None) == (method.extra is None), name


@pytest.mark.parametrize("name", list(METHODS))
def test_catalog_styles_and_studies_give_the_same_facts(name):
    method = METHODS[name]
    facts = catalog.describe_backend(name)
    style = style_of(name)
    assert (facts["family"], facts["exact"], facts["mode"], facts["accuracy"]) == (
        method.family, method.exact, method.mode, method.accuracy)
    assert (facts["colour"], facts["marker"], facts["linestyle"]) == (
        method.colour, method.marker, style.linestyle) == (
        style.colour, style.marker, "-" if method.exact else "--")
    # a row's family says it too, but for a reduced-precision variant, which says it itself
    assert catalog.is_exact(method.family) is (method.exact or method.accuracy == "reduced-precision")
    assert accuracy.method_class(name, method.family) == method.accuracy
    assert (name in scaling.FD_EVALUATIONS) is (method.evaluations is not None)
    assert kinks._tol(name) == (kinks.EXACT_TOL if method.exact else kinks.FD_TOL)
    assert {b for m, b in breakeven.PAIRS if m == name} == set(method.breakeven)


def test_every_listing_names_registered_methods_and_known_classes():
    assert backends.names() == list(METHODS)
    from diffcompare.operators.dense import TABLE
    from diffcompare.problems.contract import RUNS_ON

    for name, method in METHODS.items():
        assert TABLE["gradient"][name].how == TABLE["pullback"][name].how == method.gradient
        if method.gradient_only:            # every other operator refused, saying why
            assert {TABLE[op][name].reason for op in TABLE if op not in ("gradient", "pullback")} \
                == {f"{method.gradient_only}: no {op}" for op in TABLE
                    if op not in ("gradient", "pullback")}, name
        assert method.namespace in RUNS_ON, name
        assert set(method.breakeven) <= set(METHODS), name
    assert set(accuracy.BOUNDS) == set(registry.ACCURACY_CLASSES)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {m.extra for m in METHODS.values()} - {None} <= set(extras)
    assert len({m.implementation for m in METHODS.values()}) == len(METHODS)
    # the exact families are those whose every method is exact, finite differences none
    assert catalog.EXACT_FAMILIES == ("engine", "manual", "symbolic", "jax", "torch", "autograd")
    assert not any(m.exact for m in METHODS.values() if m.family == registry.FD_FAMILY)


def test_a_missing_or_unknown_fact_fails_when_the_description_is_made():
    base = dataclasses.asdict(METHODS["engine"])
    with pytest.raises(TypeError, match="colour"):
        MethodInfo(**{k: v for k, v in base.items() if k != "colour"})
    for fact, value, message in (("family", "fortran", "family 'fortran' is not one of"),
                                 ("mode", "sideways", "mode 'sideways'"),
                                 ("accuracy", "roughly", "accuracy 'roughly'"),
                                 ("tolerance", 0.0, "tolerance"),
                                 ("colour", "blue", "colour 'blue'"),
                                 ("implementation", "engine", "module:Class"),
                                 ("devices", ("gpu",), "devices starting with 'cpu'")):
        with pytest.raises(ValueError, match=message):
            MethodInfo(**dict(base, **{fact: value}))
    with pytest.raises(ValueError, match="a finite difference is not exact"):
        MethodInfo(**dict(base, family="finite-difference"))


def test_an_unregistered_backend_class_says_so_when_asked_a_fact():
    class Unregistered(backends.Backend):
        name = "my-method"

    with pytest.raises(KeyError, match="unknown backend 'my-method'; known backends: engine"):
        Unregistered().family
    with pytest.raises(KeyError, match="unknown backend 'my-method'"):
        backends.get("my-method")
    # a results folder's unknown name is described as unknown, never a crash
    assert catalog.describe_backend("my-method")["family"] == "unknown"
    assert accuracy.method_class("my-method", "jax") == "exact"


def test_descriptions_are_read_without_importing_any_backend_or_optional_library():
    code = ("import sys; from diffcompare.backends import registry, styles; "
            "from diffcompare import backends; "
            "facts = [(m.family, m.exact, styles.style_of(n)) for n, m in registry.METHODS.items()]; "
            "backends.namespace_of('jax-jit'); backends.devices_of('torch'); "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('jax', 'torch', 'sympy', 'autograd', 'numdifftools', 'symengine') "
            "or m.startswith('diffcompare.backends.') and m.split('.')[-1] not in "
            "('base', 'registry', 'styles')); print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""}, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
