"""Where rows were measured: the ``host`` and ``executor`` columns, read back.

A group's backends always run back to back in one worker process on one host, so
ratios within a group are side by side; times of different groups are comparable
only when one host measured them. A Dask run may spread groups over several hosts,
and :func:`mixed_hosts_message` says so, for the report to show.

>>> import pandas as pd
>>> rows = pd.DataFrame({"host": ["a", "a", "b", None], "status": ["ok"] * 4,
...                      "time_median_s": [1e-3, 2e-3, 1e-3, 5e-4]})
>>> timing_hosts(rows)
{'a': 2, 'b': 1}
>>> print(mixed_hosts_message(rows))        # doctest: +NORMALIZE_WHITESPACE
Timings come from 2 hosts (a: 2 rows, b: 1 row): compare times measured on one host; ratios
within one problem, size and dtype are always from one host.
>>> mixed_hosts_message(rows[rows["host"] == "a"]) is None
True
"""
from __future__ import annotations


def timing_hosts(rows) -> dict:
    """``{host: number of ok rows with a time}`` of a results frame (rows without a host,
    written before hosts were recorded, are left out)."""
    if rows is None or len(rows) == 0 or "host" not in rows:
        return {}
    timed = rows[(rows["status"] == "ok") & rows["time_median_s"].notna() & rows["host"].notna()]
    counts = timed["host"].value_counts()
    return {str(host): int(n) for host, n in sorted(counts.items())}


def mixed_hosts_message(rows) -> str | None:
    """A warning when the timings of ``rows`` come from more than one host, else None."""
    hosts = timing_hosts(rows)
    if len(hosts) < 2:
        return None
    listed = ", ".join(f"{h}: {n} row{'s' if n != 1 else ''}" for h, n in hosts.items())
    return (f"Timings come from {len(hosts)} hosts ({listed}): compare times measured on one "
            "host; ratios within one problem, size and dtype are always from one host.")
