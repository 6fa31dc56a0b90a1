"""The evaluation trace (primal, tangent, adjoint per intermediate) against Baydin et al. 2018, Table 2."""
from __future__ import annotations

import math

import pytest

from diffcompare.engine import function
from diffcompare.engine.evaluation_trace import (BAYDIN_INPUTS, TraceError, baydin, evaluation_trace,
                                                 recording)


def _col(t, attr):
    return [float(getattr(r, attr)) for r in t.rows]


def test_baydin_table_2():
    t = evaluation_trace(baydin, BAYDIN_INPUTS)           # ẋ1 = 1, ẋ2 = 0, as the paper's table
    assert [r.name for r in t.rows] == ["v-1", "v0", "v1", "v2", "v3", "v4", "v5"]
    assert [r.expression for r in t.rows] == ["x1", "x2", "ln(v-1)", "v-1 × v0", "v1 + v2", "sin(v0)", "v3 − v4"]
    assert [r.op for r in t.rows][2:] == ["LogBackward0", "MulBackward0", "AddBackward0", "SinBackward0",
                                          "SubBackward0"]
    s5 = math.sin(5.0)
    assert _col(t, "primal") == pytest.approx([2, 5, math.log(2), 10, math.log(2) + 10, s5,
                                               math.log(2) + 10 - s5], abs=1e-15)
    assert round(float(t.output.primal), 3) == 11.652
    assert _col(t, "tangent") == pytest.approx([1, 0, 0.5, 5, 5.5, 0, 5.5], abs=1e-15)
    assert _col(t, "adjoint") == pytest.approx([5.5, 2 - math.cos(5.0), 1, 1, 1, -1, 1], abs=1e-15)
    assert round(float(t.inputs[1].adjoint), 3) == 1.716


def test_direction_x2_gives_the_other_partial():
    t = evaluation_trace(baydin, BAYDIN_INPUTS, direction={"x2": 1.0})
    assert _col(t, "tangent") == pytest.approx([0, 1, 0, 2, 2, math.cos(5.0), 2 - math.cos(5.0)], abs=1e-15)
    assert t.direction == {"x1": 0.0, "x2": 1.0}


def test_an_intermediate_used_twice_collects_both_adjoints_and_dead_code_is_left_out():
    def f(a, b):
        unused = (a * 3.0).exp()                        # not on the path to y: no row  # noqa: F841
        s = a * b
        return s * s + s.sin()
    t = evaluation_trace(f, {"a": 0.5, "b": 2.0})
    assert [r.expression for r in t.rows] == ["a", "b", "v-1 × v0", "v1 × v1", "sin(v1)", "v2 + v3"]
    s = 1.0
    assert float(t.rows[2].adjoint) == pytest.approx(2 * s + math.cos(s), abs=1e-15)   # ∂y/∂s, two uses
    assert float(t.output.tangent) == pytest.approx((2 * s + math.cos(s)) * 2.0, abs=1e-14)   # ∂y/∂a = ·b
    assert [float(r.adjoint) for r in t.inputs] == pytest.approx([(2 + math.cos(1)) * 2, (2 + math.cos(1)) * 0.5])


def test_text_table():
    text = evaluation_trace(baydin, BAYDIN_INPUTS).text()
    assert "v1   = ln(v-1)      0.6931         0.5           1" in text.splitlines()
    assert text.splitlines()[-1] == "y = 11.6521; ẏ = 5.5 (the derivative along ẋ); ∂y/∂x1 = 5.5, ∂y/∂x2 = 1.7163"


def test_recording_restores_the_engine():
    before = function.make_output
    with pytest.raises(RuntimeError), recording():
        raise RuntimeError
    assert function.make_output is before


@pytest.mark.parametrize("fn, inputs, direction, message", [
    (lambda x: x * 2.0, {"x": [1.0, 2.0]}, None, "need a scalar output: reduce it"),
    (baydin, BAYDIN_INPUTS, {"x3": 1.0}, "the direction names \\['x3'\\], which are not inputs"),
    (lambda x: x.no_such_method(), {"x": 1.0}, None, "raised AttributeError.*engine's tensor operators"),
    (lambda x: 3.0, {"x": 1.0}, None, "returned float, not a tensor"),
    (baydin, {}, None, "pass the inputs as a dict"),
])
def test_bad_input_says_what_to_do(fn, inputs, direction, message):
    with pytest.raises(TraceError, match=message):
        evaluation_trace(fn, inputs, direction)


def test_demo_page_has_the_trace_section(tmp_path):
    from diffcompare import demo

    lines = []
    index = demo.run(tmp_path, echo=lines.append)
    page = index.read_text(encoding="utf-8")
    assert 'id="trace"' in page and "An evaluation trace" in page
    assert page.count('id="trace"') == 1 and "v3 − v4" in page
    assert "11.6521" in page and "1.7163" in page and "5.5000" in page
    assert any(line.startswith("evaluation trace of baydin") for line in lines)
