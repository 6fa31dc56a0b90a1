"""``diffcompare trace FILE``: the evaluation trace of a function in a file."""
from __future__ import annotations

from diffcompare.cli import main

BAYDIN = '''inputs = {"x1": 2.0, "x2": 5.0}
def f(x1, x2):
    return x1.log() + x1 * x2 - x2.sin()
'''


def test_trace_prints_the_table(tmp_path, capsys):
    path = tmp_path / "baydin.py"
    path.write_text(BAYDIN)
    assert main(["trace", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("evaluation trace of f: forward primal, tangent (forward mode, ẋ_x1 = 1, ẋ_x2 = 0)")
    assert out[-1] == "y = 11.6521; ẏ = 5.5 (the derivative along ẋ); ∂y/∂x1 = 5.5, ∂y/∂x2 = 1.7163"
    assert main(["trace", str(path), "--direction", "x2=1", "--digits", "3"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("y = 11.652; ẏ = 1.716 (the derivative along ẋ)")


def test_trace_bad_input_is_one_line_and_status_2(tmp_path, capsys):
    path = tmp_path / "baydin.py"
    path.write_text(BAYDIN)
    assert main(["trace", str(path), "--direction", "x1"]) == 2
    assert "write NAME=NUMBER, e.g. --direction x1=1" in capsys.readouterr().err
    assert main(["trace", str(path), "--direction", "y=1"]) == 2
    assert "the direction names ['y'], which are not inputs" in capsys.readouterr().err
    assert main(["trace", str(tmp_path / "missing.py")]) == 2
    assert "is not a file" in capsys.readouterr().err
    (tmp_path / "vec.py").write_text("inputs = {'x': [1.0, 2.0]}\ndef f(x):\n    return x * 2.0\n")
    assert main(["trace", str(tmp_path / "vec.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("diffcompare: error: f returns shape (2,)") and "reduce it" in err
