"""The Hessian reference (central differences of the exact gradient program at 100 digits) is
made once per (problem, size, seed) and read back from the cache by every other method."""
import numpy as np
import pytest

from diffcompare.measure import accuracy
from diffcompare.problems import Problem


def _problem(fn=lambda xp, x: xp.sum(x ** 3) + xp.sum(x[1:] * x[:-1])):
    return Problem("coupled_cubes", fn, lambda n, s: (np.linspace(-1.0, 2.0, n) + s,),
                   "Σ x³ + Σ x_i x_{i+1}")


def _exact(n, seed):
    x = np.linspace(-1.0, 2.0, n) + seed
    return np.diag(6 * x) + np.eye(n, k=1) + np.eye(n, k=-1)


@pytest.fixture
def counted(monkeypatch):
    calls = []
    real = accuracy.exact_gradient_program

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(accuracy, "exact_gradient_program", counting)
    return calls


def test_one_reference_serves_every_hessian_operator_and_method(tmp_path, counted):
    p, H = _problem(), _exact(5, 0)
    first = accuracy.operator_accuracy(p, "hessian", H, 5, 0, cache_dir=tmp_path)
    assert counted == [1] and first[0]["rho"] < 1e-15
    assert first[1].startswith("every column by central differences")
    # another method's dense and sparse Hessian, and the diagonal: read from the cache
    sparse = accuracy.operator_accuracy(p, "hessian_sparse", H + 1e-6, 5, 0, cache_dir=tmp_path)
    diag = accuracy.operator_accuracy(p, "hessian_diagonal", np.diag(H), 5, 0,
                                      cache_dir=tmp_path)
    assert counted == [1]
    assert sparse[0]["rho"] == pytest.approx(1e-6, rel=1e-6) and diag[0]["rho"] < 1e-15
    assert sparse[1] == first[1] == diag[1]
    # a resumed run (a new process: nothing in memory) reads the file
    assert len(list(tmp_path.glob("*-hessian.json"))) == 1


def test_the_key_follows_size_seed_code_and_tangent(tmp_path, counted):
    p = _problem()
    accuracy.operator_accuracy(p, "hessian", _exact(5, 0), 5, 0, cache_dir=tmp_path)
    accuracy.operator_accuracy(p, "hessian", _exact(6, 0), 6, 0, cache_dir=tmp_path)
    accuracy.operator_accuracy(p, "hessian", _exact(5, 1), 5, 1, cache_dir=tmp_path)
    redefined = _problem(lambda xp, x: xp.sum(x ** 3) - xp.sum(x[1:] * x[:-1]))
    other = accuracy.operator_accuracy(redefined, "hessian", _exact(5, 0), 5, 0,
                                       cache_dir=tmp_path)
    assert len(counted) == 4 and other[0]["rho"] == pytest.approx(1.0)   # -1 where H has +1
    v = np.arange(5.0)
    for _ in range(2):
        hvp = accuracy.operator_accuracy(p, "hvp", _exact(5, 0) @ v, 5, 0, cache_dir=tmp_path,
                                         tangent=v)
        assert hvp[0]["rho"] < 1e-14 and hvp[1].startswith("H v by central differences")
    accuracy.operator_accuracy(p, "hvp", _exact(5, 0) @ -v, 5, 0, cache_dir=tmp_path, tangent=-v)
    assert len(counted) == 6


def test_a_reference_that_cannot_be_made_is_cached_as_not_measured(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        refuse.calls += 1
        raise NotImplementedError("the function's DAG has 99999 edges (limit 12000)")

    refuse.calls = 0
    monkeypatch.setattr(accuracy, "exact_gradient_program", refuse)
    for _ in range(2):
        err, label = accuracy.operator_accuracy(_problem(), "hessian", _exact(4, 0), 4, 0,
                                                cache_dir=tmp_path)
        assert err is None and label.startswith("not-measured") and "99999 edges" in label
    assert refuse.calls == 1


def test_the_group_setup_makes_the_references_its_cells_read(tmp_path, counted):
    from diffcompare import problems
    from diffcompare.measure.cell import prepare_group
    from diffcompare.operators.measured import tangent

    p = _problem()
    problems.register(p, replace=True)
    try:
        prepare_group(p.name, 4, 0, options={"cache_dir": str(tmp_path),
                                             "operators": ["hessian", "hvp", "hessian_sparse"]})
        made = len(counted)
        assert made == 3                      # the gradient, the Hessian's columns, H v
        accuracy.operator_accuracy(p, "hessian_sparse", _exact(4, 0), 4, 0, cache_dir=tmp_path)
        v = tangent(4, 0)
        accuracy.operator_accuracy(p, "hvp", _exact(4, 0) @ v, 4, 0, cache_dir=tmp_path, tangent=v)
        assert len(counted) == made
    finally:
        problems.unregister(p.name)
