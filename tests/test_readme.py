"""The README's examples work as written."""
import pathlib
import re

import numpy as np

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def _block(marker: str) -> str:
    text = README.read_text()
    match = re.search(rf"<!-- {marker} -->\s*```python\n(.*?)```", text, re.S)
    assert match, f"README has no python block after <!-- {marker} -->"
    return match.group(1)


def test_user_defined_problem_example_runs_through_every_method(capsys):
    from diffcompare import problems

    namespace = {}
    try:
        exec(compile(_block("user-problem-example"), "README.md", "exec"), namespace)
    finally:
        problems.unregister("softplus_sum")
    lines = capsys.readouterr().out.strip().splitlines()
    names = [line.split()[0] for line in lines]
    assert {"engine", "sympy", "fd-central", "fd-complex-step"} <= set(names)
    x = namespace["x"][0]
    sigmoid = 1 / (1 + np.exp(-x[:3]))
    for line in lines:
        values = np.array([float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)])
        np.testing.assert_allclose(values, sigmoid, rtol=1e-4, atol=1e-6)
