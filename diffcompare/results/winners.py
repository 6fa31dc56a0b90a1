"""Winners: which method is fastest, most accurate, least memory — computed in one place.

:func:`winners` compares methods per (problem, size, dtype) and criterion, only over the
seeds every compared method ran, and reports differences within a stated tolerance as
ties (all tied methods are listed). Headline findings (the report's "answers first"
block, summaries) read this table instead of ranking cells themselves.

>>> import pandas as pd
>>> cells = pd.DataFrame({
...     "problem": ["p"] * 3, "size": [4] * 3, "seed": [0] * 3, "dtype": ["float64"] * 3,
...     "backend": ["engine", "jax-jit", "fd-central"],
...     "family": ["engine", "jax", "finite-difference"], "status": ["ok"] * 3,
...     "gradient_s": [2e-5, 1e-5, 5e-6], "gradient_q1_s": [1.9e-5, 0.9e-5, 4e-6],
...     "gradient_q3_s": [2.1e-5, 1.1e-5, 6e-6],
...     "error_rho": [1e-16, 2e-16, 1e-10], "peak_bytes": [900, None, 800],
...     "memory_source": ["tracemalloc", None, "tracemalloc"]})
>>> w = winners(cells).set_index("criterion")
>>> w.loc["fastest exact", "winners"]          # fd-central is not exact
('jax-jit',)
>>> w.loc["most accurate", "winners"]          # 1e-16 and 2e-16: within 4 ulps, a tie
('engine', 'jax-jit')
"""
from __future__ import annotations

import numpy as np

from .catalog import is_exact
from .rounding import rounding_level
from ..measure.accuracy import agreement_members
from ..problems.validity import at_kink

#: The criteria, in the order rows come out.
CRITERIA = ("fastest exact", "most accurate", "least memory")

#: Columns of the table :func:`winners` returns.
WINNER_COLUMNS = ["problem", "size", "dtype", "criterion", "measure", "winners", "best",
                  "tolerance", "compared", "seeds", "note", "flagged"]

#: Default tolerances: accuracy ties within ``ULPS`` units of the dtype's epsilon
#: (on ρ, a relative error); memory ties within ``MEMORY_RTOL`` (or MEMORY_ATOL).
ULPS = 4
MEMORY_RTOL = 0.05
#: below this, bytes are the interpreter's and the measurement's own (a few small objects)
MEMORY_ATOL = 16 * 1024
#: accuracy ties also within this multiple of the exact methods' median rho (rounding level)
ROUNDING_FACTOR = 4


def winners(cells, criteria=CRITERIA, *, ulps: float = ULPS, memory_rtol: float = MEMORY_RTOL):
    """The winners of each (problem, size, dtype) and criterion, as a tidy DataFrame.

    ``cells``: a cells table (:func:`diffcompare.results.cells.cells_table`, or
    ``load(dir).cells``); only rows with status ``ok`` are compared. ``criteria``: any of
    :data:`CRITERIA`.

    Returns one row per (problem, size, dtype, criterion) where at least one method had a
    value, with the columns :data:`WINNER_COLUMNS`:

    - ``problem`` (str), ``size`` (int), ``dtype`` (str), ``criterion`` (str, one of CRITERIA);
    - ``measure``: the column compared — ``gradient_s`` (median seconds of one gradient),
      ``error_rho`` (ρ against the reference) or ``peak_bytes``;
    - ``winners``: tuple of backend names, the best first, then every method tied with it;
    - ``best``: the best method's value of ``measure`` (worst over the compared seeds);
    - ``tolerance``: the tie rule applied, in words;
    - ``compared``: tuple of every backend compared (ok on all of ``seeds``), best first;
    - ``seeds``: tuple of the seeds compared (those every compared method ran);
    - ``note``: what was left out and why ("" when nothing), e.g. methods without a value;
    - ``flagged``: for "fastest exact", the timings that decided it (the winners' and the
      first method after them) that the cells table flags (``timing_flags``: loaded, noisy,
      non-monotone), as ``(backend, reasons)`` pairs; the note says so too. ``()`` otherwise.

    Rules: "fastest exact" compares exact methods (engine, manual, symbolic, JAX, torch
    families) by ``gradient_s``; a method whose interquartile range of timing samples
    (``gradient_q1_s``..``gradient_q3_s``, else median ± ``gradient_iqr_s``/2) overlaps the
    fastest's is tied. "most accurate" compares every method by its largest ``error_rho``
    over the seeds; within ``ulps`` × the dtype's machine epsilon of the best is a tie, and so
    is anything at or below the exact methods' rounding level (``ROUNDING_FACTOR`` × the median
    ρ of the exact methods, when three or more were measured): there the differences are the
    function's own rounding noise.  A cell whose inputs put an op exactly on its kink (its
    message carries the kink note, :func:`diffcompare.problems.validity.at_kink`) has no
    "most accurate" row: every method returns a convention there, none is more right.
    "least memory" compares ``peak_bytes``; within ``memory_rtol`` (or 16 KiB) of the least
    is a tie; the note names the memory sources when they differ. Over several seeds,
    a method's value is its median (time) or its largest (error, memory) over the seeds.

    Devices (the cells table's ``device``, e.g. "gpu: NVIDIA H100 80GB HBM3"; a cell without
    one ran on the CPU): where the compared methods ran on more than one device, the note
    names the methods off the CPU and their device ("on gpu: jax-jit"), and "least memory"
    ranks only the host-memory measurements (a GPU allocator's bytes are not on the host's
    scale; the note names the methods left out).
    """
    import pandas as pd

    unknown = [c for c in criteria if c not in CRITERIA]
    if unknown:
        raise ValueError(f"unknown criteria {unknown}; use some of {list(CRITERIA)}.")
    out = []
    if cells is None or len(cells) == 0:
        return pd.DataFrame(columns=WINNER_COLUMNS)
    ok = cells[cells["status"] == "ok"]
    for (problem, size, dtype), group in ok.groupby(["problem", "size", "dtype"], sort=False):
        for criterion in criteria:
            row = _judge(group, criterion, dtype, ulps, memory_rtol)
            if row is not None:
                out.append({"problem": problem, "size": int(size), "dtype": dtype,
                            "criterion": criterion, **row})
    return pd.DataFrame(out, columns=WINNER_COLUMNS)


def _judge(group, criterion, dtype, ulps, memory_rtol):
    measure = {"fastest exact": "gradient_s", "most accurate": "error_rho",
               "least memory": "peak_bytes"}[criterion]
    if measure not in group:
        return None
    notes = []
    flagged = ()
    rows = group
    if criterion == "fastest exact":
        rows = rows[exact_rows(rows)]
    elif criterion == "most accurate" and "message" in rows and rows["message"].map(at_kink).any():
        return None                   # conventions at a kink, not errors: nothing to crown
    elif criterion == "most accurate" and "reference" in rows:
        # a method is never ranked against a reference made from its own agreement
        judged_by_self = [r["reference"] and r["backend"] in agreement_members(str(r["reference"]))
                          for _, r in rows.iterrows()]
        if any(judged_by_self):
            left = sorted(set(rows[judged_by_self]["backend"]))
            notes.append(f"not ranked against their own agreement: {', '.join(left)}")
            rows = rows[[not j for j in judged_by_self]]
    platforms = _platforms(rows)
    if len(set(platforms.values())) > 1:
        off_cpu = {}
        for backend, platform in platforms.items():
            if platform != "cpu":
                off_cpu.setdefault(platform, []).append(backend)
        notes.append("; ".join(f"on {p}: {', '.join(sorted(b))}" for p, b in sorted(off_cpu.items()))
                     + "; the others on the cpu")
        if criterion == "least memory":
            device_bytes = sorted(b for b, p in platforms.items() if p != "cpu")
            notes.append(f"device memory not ranked against host memory: {', '.join(device_bytes)}")
            rows = rows[[platforms.get(b) == "cpu" for b in rows["backend"]]]
    without = sorted(set(rows["backend"]) - set(rows[rows[measure].notna()]["backend"]))
    rows = rows[rows[measure].notna()]
    if rows.empty:
        return None
    if without:
        notes.append(f"no {measure} for {', '.join(without)}")
    seeds_by = rows.groupby("backend", sort=False)["seed"].apply(lambda s: frozenset(s.dropna()))
    common = frozenset.intersection(*seeds_by.values) if len(seeds_by) else frozenset()
    if not common:                                 # no seed all ran: keep the largest agreeing set
        best_set = seeds_by.value_counts().index[0]
        left = sorted(b for b, s in seeds_by.items() if s != best_set)
        notes.append(f"left out (other seeds): {', '.join(left)}")
        seeds_by, common = seeds_by[seeds_by == best_set], best_set
    rows = rows[rows["backend"].isin(seeds_by.index) & rows["seed"].isin(common)]
    per = rows.groupby("backend", sort=False)
    if criterion == "fastest exact":
        value = per[measure].median()
        q1, q3 = _quartiles(rows, per)
        order = value.sort_values(kind="mergesort").index
        best = order[0]
        tied = [b for b in order if q1[b] <= q3[best] and q3[b] >= q1[best]]
        tolerance = "tied when the interquartile ranges of the timing samples overlap"
        flagged = _flagged(rows, [b for b in order if b in tied] + [b for b in order
                                                                    if b not in tied][:1])
        if flagged:
            notes.append("decided by flagged timings: "
                         + "; ".join(f"{b} ({reasons})" for b, reasons in flagged))
    elif criterion == "most accurate":
        value = per[measure].max()
        order = value.sort_values(kind="mergesort").index
        best = order[0]
        eps = float(np.finfo(np.dtype(dtype)).eps) if _is_float(dtype) else float(np.finfo(float).eps)
        atol = ulps * eps
        floor = _rounding_floor(rows, value)
        tied = [b for b in order if value[b] <= max(value[best] + atol, floor)]
        tolerance = f"tied within {ulps:g} ulps of {dtype} on rho ({atol:.1e})"
        if floor > value[best] + atol:
            tolerance += (f", or within the exact methods' rounding level (rho <= {floor:.1e}: "
                          f"{ROUNDING_FACTOR:g} x their median)")
    else:
        value = per[measure].max()
        order = value.sort_values(kind="mergesort").index
        best = order[0]
        limit = value[best] + max(memory_rtol * value[best], MEMORY_ATOL)
        tied = [b for b in order if value[b] <= limit]
        tolerance = f"tied within {memory_rtol:.0%} (or {MEMORY_ATOL} bytes)"
        if "memory_source" in rows:
            sources = sorted(set(rows["memory_source"].dropna().astype(str)))
            if len(sources) > 1:
                notes.append(f"mixed memory sources: {', '.join(sources)}")
    return {"measure": measure, "winners": tuple(tied), "best": float(value[best]),
            "tolerance": tolerance, "compared": tuple(order),
            "seeds": tuple(sorted(int(s) for s in common)), "note": "; ".join(notes),
            "flagged": tuple(flagged)}


def _flagged(rows, backends) -> tuple:
    """``(backend, reasons)`` for each of ``backends`` whose timing the cells table flags on
    any of the compared seeds (its ``timing_flags``)."""
    if "timing_flags" not in rows:
        return ()
    out = []
    for b in backends:
        reasons = [f for f in rows[rows["backend"] == b]["timing_flags"] if isinstance(f, str) and f]
        if reasons:
            out.append((b, "; ".join(dict.fromkeys(reasons))))
    return tuple(out)


def _rounding_floor(rows, value) -> float:
    """``ROUNDING_FACTOR`` x the cell's rounding level (:func:`rounding.rounding_level`: the
    median rho of at least three exact methods); 0 when there is none.  Within it no method
    is "more accurate": the exact methods' spread is the function's own rounding noise."""
    if "family" not in rows and "exact" not in rows:
        return 0.0
    exact = dict(zip(rows["backend"], exact_rows(rows)))
    level = rounding_level(value, exact)
    return 0.0 if level is None else ROUNDING_FACTOR * level


def exact_rows(rows):
    """Which ``rows`` (cells-table rows) are of exact methods: their ``exact`` column, else
    (a table without it) their family's."""
    if "exact" in rows:
        return rows["exact"].fillna(False).astype(bool)
    return rows["family"].map(is_exact)


def platform_of(device) -> str:
    """The platform of a row's ``device`` ("gpu:0 NVIDIA H100" -> "gpu"); "cpu" when none.

    >>> platform_of("gpu:0 NVIDIA H100 80GB HBM3"), platform_of(None), platform_of("cpu:0 cpu")
    ('gpu', 'cpu', 'cpu')
    """
    return str(device).split(":")[0].strip() if isinstance(device, str) and device else "cpu"


def method_label(backend, devices=()) -> str:
    """``backend`` with the platforms it ran on beside it when any is not the CPU
    ("jax-jit (gpu)"), for answers and plots that put methods of several devices together.

    >>> method_label("jax-jit", ["gpu:0 NVIDIA H100"]), method_label("engine", ["cpu:0 cpu", None])
    ('jax-jit (gpu)', 'engine')
    """
    off_cpu = sorted({platform_of(d) for d in devices} - {"cpu"})
    return f"{backend} ({', '.join(off_cpu)})" if off_cpu else str(backend)


def _platforms(rows) -> dict:
    """backend -> the platform it ran on ("cpu", "gpu", ...: the device's part before ":")."""
    if "device" not in rows:
        return {b: "cpu" for b in rows["backend"]}
    out = {}
    for backend, device in zip(rows["backend"], rows["device"]):
        if out.get(backend, "cpu") == "cpu":
            out[backend] = platform_of(device)
    return out


def _quartiles(rows, per):
    """Per backend (q1, q3) of the gradient time: the samples' quartiles when the table
    has them, else median ± IQR / 2 (medians over seeds)."""
    med = per["gradient_s"].median()
    if "gradient_q1_s" in rows and rows["gradient_q1_s"].notna().all():
        return per["gradient_q1_s"].median(), per["gradient_q3_s"].median()
    half = (per["gradient_iqr_s"].median().fillna(0.0) / 2) if "gradient_iqr_s" in rows else med * 0
    return med - half, med + half


def _is_float(dtype) -> bool:
    try:
        return np.dtype(dtype).kind == "f"
    except TypeError:
        return False


__all__ = ["winners", "CRITERIA", "WINNER_COLUMNS", "ULPS", "MEMORY_RTOL", "MEMORY_ATOL",
           "ROUNDING_FACTOR", "method_label", "platform_of"]
