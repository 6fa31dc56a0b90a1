"""Reading study records: ``<results_dir>/studies/<name>.csv``, ``<name>.findings.json`` and,
for a study that records more than a table (the seed questions' outputs and graphs),
``<name>.json``.

The studies (:mod:`diffcompare.studies`) write these files; the report and anyone else
read them here. A record's ``status`` is one of
:data:`diffcompare.results.schema.STUDY_STATUSES`; a study planned by the suite with
no record is ``missing``.

>>> import tempfile
>>> read_studies(tempfile.mkdtemp(), planned=["fd_steps"])["fd_steps"].status
'missing'
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

STUDIES_DIR = "studies"


def study_paths(out_dir, name: str) -> tuple[Path, Path]:
    """``(<out_dir>/studies/<name>.csv, <out_dir>/studies/<name>.findings.json)``."""
    folder = Path(out_dir) / STUDIES_DIR
    return folder / f"{name}.csv", folder / f"{name}.findings.json"


def view_path(out_dir, name: str, key: str) -> Path:
    """``<out_dir>/studies/<name>.<key>.csv``: the rows of figure or table ``key`` of study ``name``."""
    return Path(out_dir) / STUDIES_DIR / f"{name}.{key}.csv"


def study_data_path(out_dir, name: str) -> Path:
    """``<out_dir>/studies/<name>.json``: what study ``name`` records beyond its table."""
    return Path(out_dir) / STUDIES_DIR / f"{name}.json"


def read_record(out_dir, name: str) -> dict | None:
    """The findings record of study ``name`` in ``out_dir``, or None."""
    _, path = study_paths(out_dir, name)
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def read_records(out_dir) -> dict:
    """Every readable findings record in ``out_dir``: ``{name: record}``."""
    folder = Path(out_dir) / STUDIES_DIR
    out = {}
    for path in sorted(folder.glob("*.findings.json")) if folder.is_dir() else ():
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue
        out[record.get("study", path.name.split(".")[0])] = record
    return out


@dataclasses.dataclass
class RecordedView:
    """A figure or table a study recorded: its declaration and its rows (None if unreadable)."""

    key: str
    plot: str | None
    caption: str
    frame: object | None


def _read_views(results_dir, record, notes) -> list:
    import pandas as pd

    out = []
    for kind in ("figures", "tables"):
        for v in (record or {}).get(kind) or ():
            path = Path(results_dir) / STUDIES_DIR / str(v.get("csv"))
            try:
                frame = pd.read_csv(path)
            except Exception as exc:     # missing, empty or corrupt: say so, keep going
                notes.append(f"{path.name} unreadable ({type(exc).__name__})")
                frame = None
            out.append(RecordedView(v["key"], v.get("plot") if kind == "figures" else None,
                                    v.get("caption") or "", frame))
    return out


@dataclasses.dataclass
class Study:
    """One study's files: its findings record and its rows (either may be missing)."""

    name: str
    record: dict | None
    frame: object | None          # pandas DataFrame of <name>.csv, or None
    note: str = ""                # why a file is missing or unreadable
    data: dict | None = None      # <name>.json, for a study that writes one, or None
    views: list = dataclasses.field(default_factory=list, repr=False)   # RecordedView each

    @property
    def status(self) -> str:
        if self.record is None:
            return "missing"
        return str(self.record.get("status") or "unknown")

    @property
    def title(self) -> str:
        return (self.record or {}).get("title") or self.name

    @property
    def findings(self) -> list:
        return list((self.record or {}).get("findings") or [])

    @property
    def records_views(self) -> bool:
        """Whether the record lists its figures and tables (records written before studies
        declared them do not)."""
        return "figures" in (self.record or {})

    @property
    def figures(self) -> list:
        """The study's figures as recorded: :class:`View` each, its rows read."""
        return [v for v in self.views if v.plot]

    @property
    def tables(self) -> dict:
        """The study's derived tables as recorded: ``{key: DataFrame or None}``."""
        return {v.key: v.frame for v in self.views if not v.plot}


def read_studies(results_dir, planned=()) -> dict:
    """``{name: Study}`` for every study with files in ``results_dir`` and every planned one."""
    import pandas as pd

    folder = Path(results_dir) / STUDIES_DIR
    names = list(planned)
    if folder.is_dir():
        names += sorted(p.name[: -len(".findings.json")] for p in folder.glob("*.findings.json"))
        names += sorted(p.stem for p in folder.glob("*.csv") if "." not in p.stem)   # not views
    out = {}
    for name in dict.fromkeys(names):
        record, frame, notes = None, None, []
        cpath, fpath = study_paths(results_dir, name)
        if fpath.exists():
            try:
                record = json.loads(fpath.read_text(encoding="utf-8"))
            except ValueError as exc:
                notes.append(f"{fpath.name} is not valid JSON ({exc})")
        else:
            notes.append(f"no {fpath.name}")
        if cpath.exists():
            try:
                frame = pd.read_csv(cpath)
            except Exception as exc:     # empty or corrupt CSV: say so, keep going
                notes.append(f"{cpath.name} unreadable ({type(exc).__name__})")
        data = None
        dpath = study_data_path(results_dir, name)
        if dpath.exists():
            try:
                data = json.loads(dpath.read_text(encoding="utf-8"))
            except ValueError as exc:
                notes.append(f"{dpath.name} is not valid JSON ({exc})")
        views = _read_views(results_dir, record, notes)
        out[name] = Study(name, record, frame, "; ".join(notes), data, views)
    return out
