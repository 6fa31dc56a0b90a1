"""How the results folder writes JSON: one encoder for every file, one timestamp format.

Rows (``results.jsonl``), the worker's messages, ``run.json``, ``catalog.json``, the run
lock and the studies' findings are all written by :func:`dumps`: NumPy scalars and arrays
become numbers and lists, non-finite floats ``null`` (strict JSON, readable anywhere),
anything else unknown its ``str``.  Times are ISO 8601 in UTC with milliseconds
(:func:`now_iso`), read back by :func:`parse_time`.

>>> import numpy as np
>>> dumps({"n": np.int64(3), "x": np.float32(0.5), "bad": float("nan"), "v": np.arange(2)})
'{"n": 3, "x": 0.5, "bad": null, "v": [0, 1]}'
>>> parse_time(iso_from_epoch(0.25)).isoformat()
'1970-01-01T00:00:00.250000+00:00'
"""
from __future__ import annotations

import datetime as _dt
import json
import math


def jsonable(value):
    """``value`` as plain JSON data: NumPy scalars and arrays become numbers and
    lists, tuples and sets become lists, non-finite floats become ``None``,
    anything else unknown becomes its ``str``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)          # NumPy scalars and arrays
    if callable(tolist):
        try:
            return jsonable(tolist())
        except Exception:
            pass
    return str(value)


def dumps(value, **kwargs) -> str:
    """``value`` (:func:`jsonable`) as strict JSON text; ``kwargs`` as ``json.dumps``'s
    (``indent``)."""
    return json.dumps(jsonable(value), allow_nan=False, **kwargs)


def now_iso() -> str:
    """Now, UTC, ISO 8601 with milliseconds: ``2026-01-01T00:00:10.000+00:00``."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def iso_from_epoch(seconds: float) -> str:
    """``time.time()``'s ``seconds`` in :func:`now_iso`'s format."""
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).isoformat(timespec="milliseconds")


def parse_time(value):
    """An ISO 8601 time as an aware UTC ``datetime`` (naive times taken as UTC, a trailing
    ``Z`` read as UTC), or None when ``value`` is empty or not a time."""
    if not value:
        return None
    try:
        t = _dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)
