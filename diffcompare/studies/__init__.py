"""Classic trade-off studies, each with its textbook expectation checked against what it measures.

Every study is a module with ``NAME``, ``TITLE``, ``EXPECTED`` (the textbook expectation, one
paragraph) and ``check(frame) -> list[Finding]``, plus either

- ``run(out_dir, quick=False) -> DataFrame``: it computes its own tidy rows (``fd_steps``,
  ``expression_swell``, ``kinks``), or
- ``analyze(results) -> DataFrame``: it derives its rows from a suite's grid results
  (``scaling``, ``breakeven``, ``accuracy``; see :mod:`diffcompare.runner.schema`).

``run_study(name, out_dir)`` writes ``<out_dir>/studies/<name>.csv`` (the rows) and
``<out_dir>/studies/<name>.findings.json`` (the expectation, every finding and a status):

>>> from diffcompare import studies
>>> sorted(studies.STUDIES)
['accuracy', 'breakeven', 'expression_swell', 'fd_steps', 'kinks', 'scaling']
>>> outcome = studies.run_study("fd_steps", "results/x")            # doctest: +SKIP
>>> outcome.status, [str(f) for f in outcome.findings][:1]          # doctest: +SKIP
('ok', ['[holds] fd-forward float64 minimum: expected ...'])

Your own study: any module (``"mypkg.my_study"``) or object in one (``"mypkg.studies:MINE"``)
with the same attributes; pass that name wherever a study name goes (``run_study``, a suite's
``studies`` list, the command line).  Its files are named by the name as given.

A study's status: ``ok`` (every measured finding holds), ``checks-failed`` (some do not),
``no-data`` (nothing to measure: a grid study on results without its cells), and, written
when the study itself fails, ``error``, ``timeout`` or ``crashed``.  From the command line
(the runner starts studies this way, in a subprocess with a timeout)::

    python -m diffcompare.studies fd_steps results/mysuite [--quick]
"""
from __future__ import annotations

import dataclasses
import json
import time
import traceback
from pathlib import Path

from . import accuracy, breakeven, expression_swell, fd_steps, kinks, scaling
from .common import Finding

STUDIES = {m.NAME: m for m in (fd_steps, expression_swell, scaling, breakeven, accuracy, kinks)}

#: What a study's status means (in ``<name>.findings.json``).
STATUSES = {
    "ok": "every finding that could be measured holds",
    "checks-failed": "at least one finding does not hold",
    "no-data": "nothing to measure (a grid study on results without its cells)",
    "error": "the study raised an exception (traceback tail in `message`)",
    "timeout": "the study ran past its time limit and was killed",
    "crashed": "the study's process died without writing its findings",
}
FAILED_STATUSES = frozenset({"error", "timeout", "crashed"})
STUDIES_DIR = "studies"


@dataclasses.dataclass
class StudyOutcome:
    name: str
    status: str
    frame: object            # the study's DataFrame (None if it failed)
    findings: list
    csv_path: Path | None
    findings_path: Path
    wall_s: float


def get(name: str):
    """The study called ``name``: a registered one, or ``"package.module"`` /
    ``"package.module:object"`` naming a study of your own."""
    if name in STUDIES:
        return STUDIES[name]
    if "." not in name and ":" not in name:
        raise KeyError(f"unknown study {name!r}; known studies: {', '.join(STUDIES)} "
                       "(or 'package.module[:object]' for a study of your own)")
    import importlib

    module_name, _, attr = name.partition(":")
    try:
        study = importlib.import_module(module_name)
        if attr:
            study = getattr(study, attr)
    except (ImportError, AttributeError) as exc:
        raise KeyError(f"study {name!r} could not be imported: {type(exc).__name__}: {exc}") from None
    missing = [a for a in ("NAME", "TITLE", "EXPECTED", "check") if not hasattr(study, a)]
    if not (hasattr(study, "run") or hasattr(study, "analyze")):
        missing.append("run or analyze")
    if missing:
        raise KeyError(f"study {name!r} lacks {', '.join(missing)}; a study defines NAME, TITLE, "
                       "EXPECTED, check(frame) and run(out_dir, quick) or analyze(results).")
    return study


def kind(study) -> str:
    """``"run"`` (computes its own rows) or ``"analyze"`` (derives them from grid results)."""
    return "analyze" if hasattr(study, "analyze") else "run"


def status_of(findings) -> str:
    measured = [f.ok for f in findings if f.ok is not None]
    if not measured:
        return "no-data"
    return "ok" if all(measured) else "checks-failed"


def study_paths(out_dir, name: str) -> tuple[Path, Path]:
    """``(<out_dir>/studies/<name>.csv, <out_dir>/studies/<name>.findings.json)``."""
    folder = Path(out_dir) / STUDIES_DIR
    return folder / f"{name}.csv", folder / f"{name}.findings.json"


def run_study(name: str, out_dir, results_df=None, quick: bool = False) -> StudyOutcome:
    """Run (or analyze) study ``name``, check it, and write its CSV and findings JSON.

    An analyze study reads ``results_df``, or the results in ``out_dir`` when it is None.
    If the study raises, its findings file records status ``error`` with the traceback's
    tail, and the exception propagates."""
    study = get(name)
    csv_path, findings_path = study_paths(out_dir, name)
    findings_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        if kind(study) == "analyze":
            if results_df is None:
                from ..runner.results import load_results

                results_df = load_results(out_dir)
            frame = study.analyze(results_df)
        else:
            frame = study.run(out_dir, quick=quick)
        findings = list(study.check(frame))
    except Exception as exc:
        write_record(out_dir, name, status="error", wall_s=time.perf_counter() - started, quick=quick,
                     message=f"{type(exc).__name__}: {exc}\n{_tail(traceback.format_exc())}")
        raise
    frame.to_csv(csv_path, index=False)
    status = status_of(findings)
    wall_s = time.perf_counter() - started
    write_record(out_dir, name, status=status, findings=findings, rows=len(frame), wall_s=wall_s,
                 quick=quick, csv=csv_path.name)
    return StudyOutcome(name, status, frame, findings, csv_path, findings_path, wall_s)


def write_record(out_dir, name: str, status: str, findings=(), message=None, **extra) -> Path:
    """Write ``<out_dir>/studies/<name>.findings.json`` (atomically)."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r} is not one of {', '.join(STATUSES)}")
    try:
        study = get(name)
    except KeyError:
        study = None
    _, path = study_paths(out_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"study": name, "title": getattr(study, "TITLE", None),
              "kind": kind(study) if study else None, "expected": getattr(study, "EXPECTED", None),
              "status": status, "message": message,
              "findings": [f.as_dict() if isinstance(f, Finding) else dict(f) for f in findings],
              "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **extra}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=2, default=_json_default) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read_record(out_dir, name: str) -> dict | None:
    """The findings record of study ``name`` in ``out_dir``, or None."""
    _, path = study_paths(out_dir, name)
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def read_records(out_dir) -> dict:
    """Every study's findings record in ``out_dir``: ``{name: record}``."""
    folder = Path(out_dir) / STUDIES_DIR
    out = {}
    for path in sorted(folder.glob("*.findings.json")) if folder.is_dir() else ():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        out[record.get("study", path.name.split(".")[0])] = record
    return out


def _json_default(value):
    try:
        return value.item()          # NumPy scalars
    except AttributeError:
        return str(value)


def _tail(text: str, max_chars: int = 3000) -> str:
    return text.strip()[-max_chars:]


__all__ = ["STUDIES", "STATUSES", "Finding", "StudyOutcome", "get", "kind", "run_study",
           "write_record", "read_record", "read_records", "status_of", "study_paths"]
