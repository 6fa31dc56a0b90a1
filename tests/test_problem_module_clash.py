"""A problem module that reuses a built-in name: one line naming the module and the clash;
the built-in catalog stays whole."""
from __future__ import annotations

import subprocess
import sys
import textwrap


def test_a_clash_in_a_problem_module_is_one_line(tmp_path):
    module = tmp_path / "mine.py"
    module.write_text(textwrap.dedent("""
        import numpy as np
        from diffcompare.problems import Problem, register
        register(Problem("rosenbrock", lambda xp, x: xp.sum(x ** 2),
                         lambda size, seed: (np.ones(size),), "mine"))
    """))
    out = subprocess.run([sys.executable, "-m", "diffcompare", "run", "--problem-module",
                          str(module), "--problems", "rosenbrock", "--backends", "engine",
                          "--sizes", "2", "--results", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    err = out.stderr.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in out.stderr
    assert "mine.py" in err[0] and "'rosenbrock' is already registered" in err[0]


def test_registering_before_the_catalog_loads_blames_the_caller_and_keeps_the_catalog():
    script = textwrap.dedent("""
        import numpy as np
        from diffcompare import problems
        try:
            problems.register(problems.Problem("gmm", lambda xp, x: xp.sum(x),
                                               lambda size, seed: (np.ones(size),), "mine"))
        except ValueError as exc:
            print("refused:", exc)
        print(problems.get("rosenbrock").name, problems.get("gmm").description != "mine",
              len(problems.all_problems()) > 20)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused: a problem named 'gmm' is already registered")
    assert lines[1] == "rosenbrock True True"
