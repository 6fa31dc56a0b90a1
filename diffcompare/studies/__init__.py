"""Classic trade-off studies, each with its textbook expectation checked against what it measures.

Every study is a module with ``NAME``, ``TITLE``, ``EXPECTED`` (the textbook expectation, one
paragraph) and ``check(frame) -> list[Finding]``, plus either

- ``run(out_dir, quick=False) -> DataFrame``: it computes its own tidy rows (``fd_steps``,
  ``expression_swell``, ``kinks``, ``saved_bytes``, ``seeds``; a study may also write
  ``<out_dir>/studies/<name>.json``, data beyond a table, as ``seeds`` does), or
- ``analyze(results) -> DataFrame``: it derives its rows from a suite's grid results
  (``scaling``, ``breakeven``, ``accuracy``; see :mod:`diffcompare.results.schema`).

and, optionally, ``FIGURES`` and ``TABLES``: the figures (each naming the report's plot that
draws it) and derived tables it shows, as :class:`~diffcompare.studies.common.View`; the run
records each view's rows (``<name>.<key>.csv``) and its declaration (the findings record's
``figures`` / ``tables``), and the report draws them from the folder alone.

``run_study(name, out_dir)`` writes ``<out_dir>/studies/<name>.csv`` (the rows) and
``<out_dir>/studies/<name>.findings.json`` (the expectation, every finding and a status):

>>> from diffcompare import studies
>>> sorted(studies.STUDIES)
['accuracy', 'breakeven', 'expression_swell', 'fd_steps', 'kinks', 'saved_bytes', 'scaling', 'seeds']
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
import time
import traceback
from pathlib import Path

from . import accuracy, breakeven, expression_swell, fd_steps, kinks, saved_bytes, scaling, seeds
from ..results.jsonio import dumps, now_iso
from ..results.schema import FAULT_STATUSES, STUDY_STATUSES
from ..results.studies import STUDIES_DIR, read_record, read_records, study_paths, view_path
from .common import Finding, View

STUDIES = {m.NAME: m for m in (fd_steps, expression_swell, scaling, breakeven, accuracy, kinks,
                                   saved_bytes, seeds)}

#: What a study's status means (in ``<name>.findings.json``): defined by the results layer.
STATUSES = STUDY_STATUSES
#: A study that was tried and went wrong (the same words mean the same for a cell).
FAILED_STATUSES = FAULT_STATUSES


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
                from ..results.folder import load_results

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
    views = record_views(out_dir, name, study, frame)
    status = status_of(findings)
    wall_s = time.perf_counter() - started
    write_record(out_dir, name, status=status, findings=findings, rows=len(frame), wall_s=wall_s,
                 quick=quick, csv=csv_path.name, **views)
    return StudyOutcome(name, status, frame, findings, csv_path, findings_path, wall_s)


def record_views(out_dir, name: str, study, frame) -> dict:
    """Write the rows of each of ``study``'s ``FIGURES`` and ``TABLES`` to
    ``<out_dir>/studies/<name>.<key>.csv`` (a view without ``data`` reads the study's own
    ``<name>.csv``) and return their declarations, for the findings
    record: ``{"figures": [{"key", "plot", "caption", "csv"}], "tables": [...]}``."""
    out = {}
    for kind, views in (("figures", getattr(study, "FIGURES", ())), ("tables", getattr(study, "TABLES", ()))):
        out[kind] = []
        for view in views:                 # a view of the rows as they are: the study's CSV
            path = view_path(out_dir, name, view.key) if view.data else study_paths(out_dir, name)[0]
            if view.data:
                view.rows(frame).to_csv(path, index=False)
            out[kind].append({"key": view.key, "plot": view.plot, "caption": view.caption,
                              "csv": path.name})
    return out


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
              "finished_at": now_iso(), **extra}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def _tail(text: str, max_chars: int = 3000) -> str:
    return text.strip()[-max_chars:]


__all__ = ["STUDIES", "STATUSES", "FAILED_STATUSES", "STUDIES_DIR", "Finding", "View", "StudyOutcome", "get", "kind",
           "run_study", "record_views", "write_record", "read_record", "read_records", "status_of", "study_paths"]
