"""The report is a view of the results folder: it builds in a process where looking up a live
problem or method raises and where nothing that runs derivatives can be imported, and a
folder written before a record existed still renders, saying what is missing."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from diffcompare.report import render
from diffcompare.report.sections import PAGE

REPO = Path(__file__).resolve().parents[2]

#: What the report process may not import: the libraries that differentiate, and the package's
#: modules that run (the seeds, the runner, the studies, the drawing of live graphs).
BLOCKED = ("sympy", "symengine", "torch", "jax", "autograd", "numdifftools",
           "diffcompare.seeds", "diffcompare.runner", "diffcompare.studies", "diffcompare.viz",
           "diffcompare.operators", "diffcompare.comparison")

SCRIPT = textwrap.dedent("""
    import importlib.abc, importlib.machinery, sys
    BLOCKED = {blocked!r}

    class Block(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path=None, target=None):     # found, but importing it fails
            if any(name == b or name.startswith(b + ".") for b in BLOCKED):
                return importlib.machinery.ModuleSpec(name, self)
            return None

        def create_module(self, spec):
            raise ImportError(f"the report imported {{spec.name}}")

    sys.meta_path.insert(0, Block())

    def refuse(*args, **kwargs):
        raise RuntimeError("the report looked up a live problem or method")

    from diffcompare import backends, problems
    from diffcompare.results import catalog
    problems.get = problems.all_problems = problems.register = refuse
    backends.get = backends.names = refuse
    catalog.describe_problem = catalog.describe_backend = catalog.snapshot = refuse
    catalog.operator_capabilities = refuse

    from diffcompare.report import build_report
    build_report(sys.argv[1], sys.argv[2])
""")


def test_the_report_builds_from_the_folder_alone(smoke_results, tmp_path):
    out = tmp_path / "view.html"
    proc = subprocess.run([sys.executable, "-c", SCRIPT.format(blocked=BLOCKED), str(smoke_results), str(out)],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = out.read_text(encoding="utf-8")
    assert "could not be built" not in page and "could not be drawn" not in page
    for sid, title, _ in PAGE:
        assert f'<section class="report" id="{sid}"' in page, sid
    seeds = page.split('id="seeds"', 1)[1].split('<section class="report"', 1)[0]
    assert seeds.count('<div class="graph">') >= 6          # the recorded graphs, drawn from the record
    assert "no record of the seed questions" not in seeds and "w.grad</code> = [1.5]" in seeds
    assert page.count('<svg class="plot"') >= 9


def test_a_folder_from_before_the_records_renders_and_says_what_is_missing(synthetic_results):
    record = synthetic_results / "studies" / "fd_steps.findings.json"
    old = {k: v for k, v in json.loads(record.read_text()).items() if k not in ("figures", "tables")}
    record.write_text(json.dumps(old))
    (synthetic_results / "catalog.json").unlink()           # before catalog.json existed
    page = render(synthetic_results)
    assert "could not be built" not in page
    for sid, _, _ in PAGE:
        assert f'<section class="report" id="{sid}"' in page, sid
    assert "This results folder has no record of the seed questions" in page
    assert "python -m diffcompare.studies seeds &lt;results-dir&gt;" in page
    assert "record was written before runs recorded a study" in page
