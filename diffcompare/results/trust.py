"""Trust in a timing: which cells' times the machine or the samples make unreliable, and why.

:func:`timing_flags` gives each measured cell of a cells table a short list of reasons
(the table's ``timing_flags``, joined by "; "; empty (None) when nothing is wrong):

- ``loaded``: the worker had its CPU less than :data:`MIN_CPU_SHARE` of the time while the
  function or gradient samples were taken (it waited for another process: the waiting is in
  the samples); where that share says nothing (a GPU cell waits for its device; rows from
  before it was recorded), the host's load was over :data:`MAX_LOAD_PER_CPU` per CPU.  The
  share is the direct measure: the load average is the whole host's and lags by a minute, so
  a worker that kept its CPU is not flagged for other processes' load;
- ``noisy``: the gradient samples' interquartile range is over :data:`MAX_IQR_FRACTION` of
  their median;
- ``non-monotone``: for the same (problem, backend, dtype, seed), the gradient at a size
  :data:`SIZE_STEP` or more times larger was faster, beyond the two interquartile ranges
  and :data:`MONOTONE_RTOL` (both cells are flagged: which one the noise hit is unknown).

>>> import pandas as pd
>>> cells = pd.DataFrame({"problem": ["p", "p"], "backend": ["b", "b"], "dtype": ["float64"] * 2,
...     "seed": [0, 0], "size": [4, 16], "status": ["ok", "ok"], "device": [None, None],
...     "gradient_s": [5e-4, 2.6e-4], "gradient_iqr_s": [1e-5, 1e-5],
...     "gradient_q1_s": [4.9e-4, 2.5e-4], "gradient_q3_s": [5.1e-4, 2.7e-4],
...     "cpu_share": [0.6, 0.99], "load_per_cpu": [1.1, 1.1]})
>>> timing_flags(cells).tolist()
['loaded (had its CPU 60% of the time); non-monotone (slower at 4 than at 16)', 'non-monotone (faster at 16 than at 4)']
>>> flag_summary(cells.assign(timing_flags=timing_flags(cells)))
'2 of 2 timings flagged: 1 loaded, 2 non-monotone'
"""
from __future__ import annotations

import math

#: A single-threaded call pinned to its CPU keeps it 97–100% of the time on a quiet host (the
#: rest is the kernel's); below 90% the process waited for its CPU more than a tenth of the
#: sampled time, and that waiting is in the samples.
MIN_CPU_SHARE = 0.9
#: The run itself keeps about one process per CPU busy (load 1 per CPU); half as many again
#: means other work shares the cores (or their hyperthread siblings) with the samples.
MAX_LOAD_PER_CPU = 1.5
#: Quiet samples spread by 1–5% of their median; at a quarter the interquartile-range ties
#: of the winners absorb differences of that size and a ratio or a slope is not readable.
MAX_IQR_FRACTION = 0.25
#: Sizes compared for monotonicity: at 4× the size a method does more work, whatever its
#: complexity, unless its time is flat (a fixed per-call overhead dominates) ...
SIZE_STEP = 4
#: ... and a flat time varies by a few percent between sizes: faster by more than 10% beyond
#: both interquartile ranges is not that.
MONOTONE_RTOL = 0.1

#: The kinds of flag, in the order a cell lists them.
FLAG_KINDS = ("loaded", "noisy", "non-monotone")
SEPARATOR = "; "


def timing_flags(cells):
    """Why each cell's timing is not to be trusted (a Series of strings aligned with
    ``cells``: reasons joined by "; ", None when none or without a gradient time; a
    table written to CSV and read back keeps it so).

    ``cells``: a cells table (:func:`diffcompare.results.cells.cells_table`), or any frame with
    its key columns, ``status``, ``gradient_s`` and whichever of ``gradient_iqr_s``,
    ``gradient_q1_s``/``gradient_q3_s``, ``cpu_share``, ``load_per_cpu``, ``device`` it has."""
    import pandas as pd

    reasons = {i: [] for i in cells.index}
    timed = _timed(cells)
    for i, r in timed.iterrows():
        share = _number(r.get("cpu_share")) if _on_cpu(r.get("device")) else None
        load = _number(r.get("load_per_cpu"))
        high_load = load is not None and load > MAX_LOAD_PER_CPU
        if share is not None and share < MIN_CPU_SHARE:
            reasons[i].append(f"loaded (had its CPU {share:.0%} of the time"
                              + (f", load {load:.1f} per CPU)" if high_load else ")"))
        elif share is None and high_load:
            reasons[i].append(f"loaded (load {load:.1f} per CPU)")
        iqr = _number(r.get("gradient_iqr_s"))
        if iqr is not None and iqr > MAX_IQR_FRACTION * r["gradient_s"]:
            reasons[i].append(f"noisy (IQR {iqr / r['gradient_s']:.0%} of median)")
    for i, text in _non_monotone(timed).items():
        reasons[i].append(text)
    return pd.Series([SEPARATOR.join(reasons[i]) or None for i in cells.index],
                     index=cells.index, dtype=object)


def flag_summary(cells) -> str:
    """"N of M timings flagged: k loaded, ..." over the cells with a gradient time and a
    ``timing_flags`` column; "" when none is flagged."""
    if "timing_flags" not in cells:
        return ""
    flags = cells.loc[_timed(cells).index, "timing_flags"].fillna("")
    flagged = flags[flags != ""]
    if flagged.empty:
        return ""
    kinds = [{reason.split(" (")[0] for reason in f.split(SEPARATOR)} for f in flagged]
    counts = [f"{sum(kind in k for k in kinds)} {kind}" for kind in FLAG_KINDS
              if any(kind in k for k in kinds)]
    return f"{len(flagged)} of {len(flags)} timings flagged: {', '.join(counts)}"


def _timed(cells):
    """The ok cells with a gradient time."""
    ok = cells[(cells["status"] == "ok")] if "status" in cells else cells
    return ok[ok["gradient_s"].notna() & (ok["gradient_s"] > 0)]


def _non_monotone(timed) -> dict:
    """index -> "non-monotone (...)" for the cells whose gradient was faster at a size
    ``SIZE_STEP`` or more times larger (or slower than at one), beyond both IQRs and
    ``MONOTONE_RTOL``."""
    q1, q3 = _quartiles(timed)
    faster_than, slower_than = {}, {}
    keys = [c for c in ("problem", "backend", "dtype", "seed") if c in timed]
    for _, group in timed.groupby(keys, sort=False, dropna=False):
        by_size = sorted(group.index, key=lambda i: int(group.at[i, "size"]))
        for a in by_size:
            for b in by_size:
                small, big = int(group.at[a, "size"]), int(group.at[b, "size"])
                if big >= SIZE_STEP * small and q3[b] * (1 + MONOTONE_RTOL) < q1[a]:
                    faster_than.setdefault(b, []).append(small)
                    slower_than.setdefault(a, []).append(big)
    out = {}
    for i in timed.index:
        size = int(timed.at[i, "size"])
        texts = [f"slower at {size} than at {_sizes(slower_than[i])}" if i in slower_than else "",
                 f"faster at {size} than at {_sizes(faster_than[i])}" if i in faster_than else ""]
        texts = [t for t in texts if t]
        if texts:
            out[i] = f"non-monotone ({' and '.join(texts)})"
    return out


def _quartiles(timed):
    """(q1, q3) of each cell's gradient samples: the table's quartiles, else median ± IQR/2,
    else the median."""
    med = timed["gradient_s"].astype(float)
    half = (timed["gradient_iqr_s"].astype(float).fillna(0.0) / 2
            if "gradient_iqr_s" in timed else med * 0)
    q1 = timed["gradient_q1_s"].astype(float) if "gradient_q1_s" in timed else med - half
    q3 = timed["gradient_q3_s"].astype(float) if "gradient_q3_s" in timed else med + half
    return q1.fillna(med - half), q3.fillna(med + half)


def _sizes(sizes) -> str:
    return ", ".join(str(s) for s in sorted(set(sizes)))


def _number(value):
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _on_cpu(device) -> bool:
    """Whether a cell computed on the CPU: on a GPU the process also waits for the device,
    so a low CPU share there is no sign of load."""
    from .winners import platform_of

    return platform_of(device) == "cpu"


__all__ = ["timing_flags", "flag_summary", "MIN_CPU_SHARE", "MAX_LOAD_PER_CPU",
           "MAX_IQR_FRACTION", "SIZE_STEP", "MONOTONE_RTOL", "FLAG_KINDS"]
