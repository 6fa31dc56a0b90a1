"""The report's plots, each a function from tidy data to inline SVG text (or None when
there is nothing to draw, so the page can say so instead of showing an empty frame).

One backend keeps one colour and marker in every plot; finite differences are drawn
dashed (approximations), exact methods solid.  Values of exactly zero cannot sit on a
log axis: they are drawn as hollow markers on a floor line labelled "exactly 0".
"""
from __future__ import annotations

import functools
import math

import numpy as np

from .data import backend_order, finite, problem_order
from ..backends.styles import Style, style_of
from ..results.winners import method_label
from .svg import figure_svg, style
from ..units import fmt_bytes, fmt_seconds

class Failed(str):
    """What a plot function returns when drawing raised: the error, to show instead."""


def drawn(svg) -> bool:
    """Whether ``svg`` is a plot (not None, not :class:`Failed`)."""
    return svg is not None and not isinstance(svg, Failed)


def _safe(fn):
    """A plot that cannot be drawn from odd data says why instead of sinking its section."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as exc:
            return Failed(f"{type(exc).__name__}: {exc}")
    return wrapper


ZERO_FLOOR = 1e-18          # where exact zeros are drawn on log axes
CHEAP_GRADIENT_BAND = (4.0, 5.0)


def method_style(backend: str, family: str | None = None, catalog: dict | None = None):
    """The :class:`~diffcompare.backends.styles.Style` of ``backend``: the one the run stored
    in ``catalog.json`` (its ``colour``, ``marker`` and ``linestyle`` under the method) where it
    did, else the one table :data:`diffcompare.backends.styles.STYLES` (stable for unknown names)."""
    stored = ((catalog or {}).get("backends") or {}).get(str(backend))
    if isinstance(stored, dict) and stored.get("colour") and stored.get("marker"):
        return Style(stored["colour"], stored["marker"], stored.get("linestyle") or "-")
    return style_of(backend, family)


def backend_style(backend: str, family: str | None = None, catalog: dict | None = None) -> dict:
    """:func:`method_style` as matplotlib keyword arguments."""
    return method_style(backend, family, catalog).as_kwargs()


def _figure(n_panels: int, panel_w: float = 3.3, panel_h: float = 2.5, ncols_max: int = 3):
    from matplotlib.figure import Figure

    ncols = max(1, min(ncols_max, n_panels))
    if n_panels == 1:
        panel_w = max(panel_w, 6.0)
    nrows = max(1, math.ceil(n_panels / ncols))
    fig = Figure(figsize=(panel_w * ncols, panel_h * nrows + 0.3), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[n_panels:]:
        ax.set_visible(False)
    return fig, list(axes[:n_panels])


def _legend(fig, handles: dict, ncol: int | None = None):
    """One legend under the panels, as many columns as fit the figure's width; the figure
    grows by the legend's height, so the panels keep theirs."""
    if not handles:
        return
    labels = list(handles)
    entry_in = max(len(label) for label in labels) * 0.085 + 0.65     # text + handle, inches
    fits = max(1, int(fig.get_figwidth() / entry_in))
    ncol = min(ncol or 6, fits, len(labels))
    rows = math.ceil(len(labels) / ncol)
    fig.set_figheight(fig.get_figheight() + 0.24 * rows + 0.1)
    fig.legend([handles[k] for k in labels], labels, loc="outside lower center", ncol=ncol,
               frameon=False, handlelength=2.2, columnspacing=1.2)


def _size_axis(ax, sizes, label):
    sizes = sorted({int(s) for s in sizes})
    ax.set_xscale("log")
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel(label)
    if len(sizes) == 1:
        ax.set_xlim(sizes[0] / 2, sizes[0] * 2)


def _multi_size_problems(ok, column: str, x: str = "size", catalog=None) -> list:
    """Problems with a finite ``column`` at two or more values of ``x``, in catalog order."""
    out = []
    for p in problem_order(ok["problem"], catalog):
        sub = ok[(ok["problem"] == p) & ok[column].notna()]
        if sub[x].nunique() >= 2:
            out.append(p)
    return out


def _lines_by_backend(ax, sub, column: str, handles: dict, scale: float = 1.0, x: str = "size",
                      catalog=None):
    for b in backend_order(sub["backend"], catalog):
        rows = sub[(sub["backend"] == b) & sub[column].notna()].sort_values(x)
        rows = rows[rows[column] > 0]
        if rows.empty:
            continue
        fam = rows["family"].iloc[0]
        label = method_label(b, rows["device"] if "device" in rows else ())   # "jax-jit (gpu)"
        (line,) = ax.plot(rows[x].astype(float), rows[column] * scale, label=label,
                          **backend_style(b, fam, catalog))
        handles.setdefault(label, line)


def _tick_bytes(v) -> str:
    return fmt_bytes(v, digits=3)


def _tick_plain(v) -> str:
    return f"{v:,.0f}" if v >= 1 else f"{v:g}"


_TICKS = {"seconds": fmt_seconds, "bytes": _tick_bytes, "plain": _tick_plain}


def log_axis(ax, kind: str = "plain", axis: str = "y"):
    """A log axis with readable labels ("10 µs", "4 KiB", "1,000"): ticks at 1, 2, 5 × 10^k
    when the data span few decades, at powers of ten otherwise."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    getattr(ax, f"set_{axis}scale")("log")
    lo, hi = getattr(ax, f"get_{axis}lim")()
    decades = math.log10(hi / lo) if lo > 0 and hi > lo else 1.0
    subs = (1.0, 2.0, 5.0) if decades < 2.5 else (1.0,) if decades < 7 else None
    target = ax.yaxis if axis == "y" else ax.xaxis
    if kind == "bytes":                      # powers of two: 4 KiB, 8 KiB, 16 KiB
        target.set_major_locator(LogLocator(base=2.0, numticks=7))
        target.set_minor_locator(LogLocator(base=2.0, subs=(1.5,), numticks=50))
        target.set_minor_formatter(NullFormatter())
        target.set_major_formatter(FuncFormatter(lambda v, pos: _tick_bytes(v) if v > 0 else ""))
        return
    if subs is None:
        target.set_major_locator(LogLocator(base=10.0, numticks=8))
    else:
        target.set_major_locator(LogLocator(base=10.0, subs=subs))
    target.set_minor_locator(LogLocator(base=10.0, subs=tuple(range(2, 10)), numticks=50))
    target.set_minor_formatter(NullFormatter())
    fmt = _TICKS[kind]
    target.set_major_formatter(FuncFormatter(lambda v, pos: fmt(v) if v > 0 else ""))


# --------------------------------------------------------------------------- accuracy

@_safe
def accuracy_strip(ok, column: str = "error_rho", key: str = "accuracy-strip", catalog=None):
    """Error of every method on every problem (worst over sizes), log scale."""
    ok = ok[ok[column].notna()]
    if ok.empty:
        return None
    problems = problem_order(ok["problem"], catalog)
    backends = backend_order(ok["backend"], catalog)
    worst = ok.groupby(["problem", "backend"], sort=False)[column].max()
    fams = ok.groupby("backend")["family"].first()
    with style():
        from matplotlib.figure import Figure

        width = max(7.0, 0.55 * len(problems) + 2.5)
        fig = Figure(figsize=(width, 4.2), layout="constrained")
        ax = fig.add_subplot()
        handles = {}
        nb = len(backends)
        values = [v for v in worst.values if v > 0 and math.isfinite(v)]
        top = max(values) if values else 1.0
        floor = min(values) / 30 if values else ZERO_FLOOR
        floor = min(floor, 1e-17)
        for j, b in enumerate(backends):
            st = backend_style(b, fams.get(b), catalog)
            xs, ys, zx = [], [], []
            for i, p in enumerate(problems):
                v = worst.get((p, b))
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    continue
                x = i + (j - (nb - 1) / 2) * (0.8 / max(nb, 1))
                if v > 0:
                    xs.append(x)
                    ys.append(v)
                else:
                    zx.append(x)
            h = ax.scatter(xs, ys, marker=st["marker"], color=st["color"], s=26, zorder=3,
                           linewidths=1.2)
            if zx:
                hollow = st["marker"] not in ("x", "+", "1", "2", "3", "4")
                ax.scatter(zx, [floor] * len(zx), marker=st["marker"], s=26, zorder=3, linewidths=1.0,
                           **({"facecolors": "none", "edgecolors": st["color"]} if hollow
                              else {"color": st["color"]}))
            handles.setdefault(b, h)
        any_zero = bool((worst == 0).any())
        ax.set_yscale("log")
        ax.set_ylim(floor / 3 if any_zero else floor, max(top * 10, 1e-6))
        if any_zero:
            ax.axhline(floor, color="#999999", linewidth=0.8, linestyle=":")
            ax.text(len(problems) - 0.5, floor, " exactly 0", va="center", ha="left", fontsize=11,
                    color="#555555", clip_on=False)
        ax.set_xticks(range(len(problems)))
        ax.set_xticklabels(problems, rotation=30, ha="right", rotation_mode="anchor")
        ax.set_xlim(-0.6, len(problems) - 0.4)
        for i in range(1, len(problems)):
            ax.axvline(i - 0.5, color="#dddddd", linewidth=0.6, zorder=0)
        ax.grid(axis="x", visible=False)
        ax.set_ylabel("largest ρ = |x−y| / max(1, |x|+|y|)" if column == "error_rho"
                      else "largest relative error")
        _legend(fig, handles)
        return figure_svg(fig, key, worst.rename(column).reset_index())


@_safe
def fd_step_vplot(frame, key: str = "fd-steps", catalog=None):
    """The fd_steps study: error against step size, one panel per dtype."""
    if frame is None or frame.empty or "rel_error" not in frame:
        return None
    dtypes = [d for d in ("float64", "float32") if d in set(frame["dtype"])]
    dtypes += sorted(set(frame["dtype"]) - set(dtypes))
    methods = list(dict.fromkeys(frame["method"]))          # the study's order
    with style():
        fig, axes = _figure(len(dtypes), panel_w=4.6, panel_h=3.3, ncols_max=2)
        handles = {}
        all_err = finite(frame["rel_error"])
        pos = [e for e in all_err if e > 0]
        floor = min(min(pos) / 10 if pos else ZERO_FLOOR, 1e-17)
        model = False
        for ax, dtype in zip(axes, dtypes):
            sub = frame[frame["dtype"] == dtype]
            zeros = False
            # methods whose curves coincide (the complex step and central differences share
            # their O(h²) branch) stay visible: the complex step is drawn first, wide and
            # pale, the others thin on top of it
            for m in sorted(methods, key=lambda m: m != "fd-complex-step"):
                rows = sub[sub["method"] == m].sort_values("h")
                if rows.empty:
                    continue
                h = rows["h"].astype(float).values
                e = rows["rel_error"].astype(float).values
                st = backend_style(m, "finite-difference")
                shown = np.where(e > 0, e, floor)
                zeros = zeros or bool((e == 0).any())
                under = m == "fd-complex-step"
                (line,) = ax.plot(h, shown, color=st["color"], marker=st["marker"],
                                  markersize=6 if under else 4, linestyle="-",
                                  linewidth=4.0 if under else 1.4, alpha=0.45 if under else 1.0,
                                  zorder=2 if under else 3, label=m)
                handles.setdefault(m, line)
                best = rows[["model_best_h", "model_best_error"]].dropna() if "model_best_h" in rows else []
                if len(best):
                    mh, me = float(best.iloc[0, 0]), float(best.iloc[0, 1])
                    if mh > 0 and me > 0:
                        ax.scatter([mh], [me], marker="o", s=70, facecolors="none",
                                   edgecolors=st["color"], linewidths=1.5, zorder=4)
                        model = True
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.invert_xaxis()
            ax.set_ylim(floor / 3, 10)
            if zeros:
                ax.axhline(floor, color="#999999", linewidth=0.8, linestyle=":")
                ax.text(1e-20, floor, "exactly 0", va="bottom", ha="right", fontsize=11, color="#555555")
            ax.set_title(f"{dtype}")
            ax.set_xlabel("step h (smaller →)")
            ax.set_ylabel("relative error")
        if model:
            from matplotlib.lines import Line2D

            handles["minimum the error model predicts"] = Line2D(
                [], [], marker="o", markersize=8, markerfacecolor="none", markeredgecolor="#555555",
                linestyle="none", markeredgewidth=1.5)
        _legend(fig, handles, ncol=min(len(handles), 5))
        cols = [c for c in ("dtype", "method", "h", "rel_error", "model_best_h", "model_best_error")
                if c in frame]
        return figure_svg(fig, key, frame[cols])


# --------------------------------------------------------------------------- speed

@_safe
def time_vs_size(ok, column: str = "gradient_s", ylabel: str = "gradient time",
                 key: str = "time-vs-size", size_labels: dict | None = None, kind: str = "seconds",
                 x: str = "size", catalog=None):
    """One panel per problem measured at two or more values of ``x`` (the problem's
    ``size``, or ``n_inputs``: the differentiated scalars), ``column`` per method, log-log."""
    problems = _multi_size_problems(ok, column, x, catalog)
    if not problems:
        return None
    with style():
        fig, axes = _figure(len(problems), panel_h=2.7)
        handles = {}
        for ax, p in zip(axes, problems):
            sub = ok[ok["problem"] == p]
            _lines_by_backend(ax, sub, column, handles, x=x, catalog=catalog)
            _size_axis(ax, sub[x].dropna(), (size_labels or {}).get(p, x))
            log_axis(ax, kind)
            ax.set_title(p)
            ax.set_ylabel(ylabel)
        _legend(fig, handles)
        return figure_svg(fig, key, _columns(ok[ok["problem"].isin(problems)], column))


@_safe
def ratio_vs_size(ok, key: str = "ratio-vs-size", size_labels: dict | None = None, catalog=None):
    """gradient time / function time per backend, with the cheap-gradient band."""
    problems = _multi_size_problems(ok, "ratio", catalog=catalog)
    if not problems:
        return None
    backends = backend_order(ok[ok["problem"].isin(problems)]["backend"], catalog)
    with style():
        fig, axes = _figure(len(problems), panel_h=2.7)
        handles = {}
        lo, hi = CHEAP_GRADIENT_BAND
        band = None
        for ax, p in zip(axes, problems):
            sub = ok[ok["problem"] == p]
            band = ax.axhspan(lo, hi, facecolor="#2ca02c", alpha=0.30, zorder=0, linewidth=0)
            for y in (lo, hi):
                ax.axhline(y, color="#2ca02c", linewidth=0.8, zorder=0)
            _lines_by_backend(ax, sub, "ratio", handles)
            _size_axis(ax, sub["size"].dropna(), (size_labels or {}).get(p, "size"))
            log_axis(ax, "plain")
            ax.set_title(p)
            ax.set_ylabel("gradient ÷ function time")
        if band is not None:
            handles[f"cheap gradient principle: {lo:g}–{hi:g}×"] = band
        _legend(fig, handles)
        return figure_svg(fig, key, _columns(ok[ok["problem"].isin(problems)], "ratio"))


@_safe
def cost_of_calls(rows, title: str, key: str = "cost-of-calls", catalog=None):
    """Total time of N gradient calls, prepare + N × per-call, for each method of ``rows``
    (columns ``backend``, ``family``, ``prepare_s``, ``gradient_s``); crossings are the
    break-even points."""
    rows = rows[rows["prepare_s"].notna() & rows["gradient_s"].notna()]
    if rows.empty:
        return None
    names = list(rows["backend"])
    base = names.index("engine") if "engine" in names else None     # the breakeven study's baseline
    lo, hi = call_range(rows["prepare_s"].astype(float).values, rows["gradient_s"].astype(float).values,
                        base)
    n = np.logspace(math.log10(lo), math.log10(hi), 200)
    with style():
        fig, (ax,) = _figure(1, panel_w=6.4, panel_h=3.6)
        handles = {}
        for _, r in rows.iterrows():
            b = r["backend"]
            st = backend_style(b, r["family"], catalog)
            (line,) = ax.plot(n, r["prepare_s"] + n * r["gradient_s"], color=st["color"],
                              linestyle=st["linestyle"], marker=st["marker"], markevery=[0, -1])
            handles.setdefault(b, line)
        ax.set_xlim(lo, hi)
        log_axis(ax, "plain", axis="x")
        log_axis(ax, "seconds")
        ax.set_xlabel("number of gradient calls N")
        ax.set_ylabel("prepare + N × per-call time")
        ax.set_title(title)
        _legend(fig, handles)
        return figure_svg(fig, key, rows[["backend", "family", "prepare_s", "gradient_s"]])


def call_range(prepare, per_call, base: int | None = None) -> tuple[float, float]:
    """The range of call counts N that shows where the lines prepare + N × per-call cross:
    a decade either side of the crossings (1 to 1000 calls when none cross); with ``base``,
    only the crossings with line ``base`` (the baseline every method is weighed against).

    >>> call_range([1.0, 0.0], [1e-6, 1e-3])      # they cross at N = 1 / (1e-3 - 1e-6) ≈ 1001
    (100.0, 100000.0)
    """
    crossings = []
    for i in range(len(prepare)):
        for j in range(i + 1, len(prepare)):
            if base is not None and base not in (i, j):
                continue
            dg = per_call[j] - per_call[i]
            if dg != 0:
                n = (prepare[i] - prepare[j]) / dg
                if n > 0 and math.isfinite(n):
                    crossings.append(n)
    if not crossings:
        return 1.0, 1000.0
    lo = 10.0 ** math.floor(math.log10(min(crossings)) - 1)
    hi = 10.0 ** math.ceil(math.log10(max(crossings)) + 1)
    return max(lo, 1.0), max(hi, 100.0)


@_safe
def prepare_vs_evaluate(rows, title: str, key: str = "prepare-vs-evaluate"):
    """Horizontal bars: one-off preparation and one gradient call, per backend."""
    rows = rows[rows["prepare_s"].notna() | rows["gradient_s"].notna()]
    if rows.empty:
        return None
    names = list(rows["backend"])
    with style():
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 0.32 * len(names) + 1.4), layout="constrained")
        ax = fig.add_subplot()
        y = np.arange(len(names))
        prep = rows["prepare_s"].astype(float).fillna(0).values
        grad = rows["gradient_s"].astype(float).fillna(0).values
        ax.barh(y - 0.2, np.where(prep > 0, prep, np.nan), height=0.38, color="#9ecae1",
                label="prepare (once)")
        ax.barh(y + 0.2, np.where(grad > 0, grad, np.nan), height=0.38, color="#08519c",
                label="one gradient call")
        ax.set_yticks(y)
        ax.set_yticklabels(names)
        ax.invert_yaxis()
        log_axis(ax, "seconds", axis="x")
        ax.set_xlabel("time")
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        fig.legend(loc="outside lower center", ncol=2, frameon=False)
        return figure_svg(fig, key, rows[["backend", "prepare_s", "gradient_s"]])


# --------------------------------------------------------------------------- memory

@_safe
def engine_saved_bytes(ok, key: str = "saved-graph-bytes", size_labels: dict | None = None,
                       catalog=None):
    """The engine's saved-graph bytes against size, one line per problem."""
    sub = ok[(ok["backend"] == "engine") & ok["saved_graph_bytes"].notna()]
    problems = [p for p in problem_order(sub["problem"], catalog) if sub[sub["problem"] == p]["size"].nunique() >= 2]
    if not problems:
        return None
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    with style():
        fig, (ax,) = _figure(1, panel_w=6.0, panel_h=3.2)
        handles = {}
        sizes = []
        for i, p in enumerate(problems):
            rows = sub[sub["problem"] == p].sort_values("size")
            rows = rows[rows["saved_graph_bytes"] > 0]
            if rows.empty:
                continue
            sizes += list(rows["size"])
            (line,) = ax.plot(rows["size"].astype(float), rows["saved_graph_bytes"], marker="o",
                              color=cmap(i % 10))
            handles.setdefault(p, line)
        _size_axis(ax, sizes, "size")
        log_axis(ax, "bytes")
        ax.set_ylabel("saved for backward")
        _legend(fig, handles, ncol=4)
        return figure_svg(fig, key, sub[sub["problem"].isin(problems)][["problem", "size", "saved_graph_bytes"]])


@_safe
def expression_swell(frame, key: str = "expression-swell", catalog=None):
    """SymPy's derivative size with and without CSE against the engine's graph, per k."""
    if frame is None or frame.empty or "k" not in frame:
        return None
    rows = frame[frame["kind"] == "size"] if "kind" in frame else frame
    rows = rows.sort_values("k")
    sympy, cse, engine = style_of("sympy"), style_of("sympy-cse"), style_of("engine")
    series = [("ops_gradient", "SymPy derivative, no CSE (operations)", sympy.colour, "-", sympy.marker),
              ("ops_gradient_cse", "SymPy derivative with CSE (operations)", cse.colour, "-", cse.marker),
              ("dag_nodes_gradient", "SymPy derivative, distinct subexpressions", sympy.colour, ":",
               sympy.marker),
              ("engine_nodes", "engine graph (nodes)", engine.colour, "-", engine.marker)]
    series = [s for s in series if s[0] in rows and rows[s[0]].notna().any()]
    if not series:
        return None
    with style():
        fig, (ax,) = _figure(1, panel_w=6.0, panel_h=3.4)
        handles = {}
        for col, label, color, ls, marker in series:
            r = rows[rows[col].notna() & (rows[col] > 0)]
            (line,) = ax.plot(r["k"].astype(float), r[col].astype(float), color=color,
                              linestyle=ls, marker=marker, markerfacecolor="none" if ls == ":" else color)
            handles[label] = line
        ks = sorted({int(k) for k in rows["k"].dropna()})
        ax.set_xticks(ks)
        log_axis(ax, "plain")
        ax.set_xlabel("k (steps of the logistic map)")
        ax.set_ylabel("operations or nodes")
        _legend(fig, handles, ncol=2)
        return figure_svg(fig, key, rows[["k"] + [c[0] for c in series]])


@_safe
def float_dtype_bars(table, key: str = "float32-vs-float64", catalog=None):
    """Best error per method in float64 and float32 (``table``: method, dtype, best_error);
    None without float32 rows."""
    if table is None or table.empty or "float32" not in set(table["dtype"]):
        return None
    methods = list(dict.fromkeys(table["method"]))          # the study's order
    dtypes = [d for d in ("float64", "float32") if d in set(table["dtype"])]
    with style():
        from matplotlib.figure import Figure

        fig = Figure(figsize=(max(6.0, 1.7 * len(methods) + 1.5), 3.0), layout="constrained")
        ax = fig.add_subplot()
        x = np.arange(len(methods))
        width = 0.8 / max(len(dtypes), 1)
        colors = {"float64": "#08519c", "float32": "#fd8d3c"}
        for i, d in enumerate(dtypes):
            vals = []
            for m in methods:
                v = table[(table["method"] == m) & (table["dtype"] == d)]["best_error"]
                vals.append(float(v.iloc[0]) if len(v) and float(v.iloc[0]) > 0 else np.nan)
            ax.bar(x + (i - (len(dtypes) - 1) / 2) * width, vals, width=width * 0.95,
                   color=colors.get(d, "#777777"), label=d)
        ax.set_xticks(x)
        ax.set_xticklabels(methods, rotation=15, ha="right", rotation_mode="anchor")
        ax.set_yscale("log")
        ax.set_ylabel("smallest relative error\nover all steps h")
        ax.minorticks_off()
        ax.grid(axis="x", visible=False)
        fig.legend(loc="outside right upper", frameon=False)
        return figure_svg(fig, key, table)


def _columns(frame, column: str):
    """The rows and columns a size plot drew: the data behind its CSV download."""
    cols = [c for c in ("problem", "size", "n_inputs", "dtype", "backend", column) if c in frame]
    return frame[frame[column].notna()][cols]


@_safe
def peak_memory(ok, key: str = "peak-memory", size_labels: dict | None = None, catalog=None):
    return time_vs_size(ok, column="peak_bytes", ylabel="peak memory of one gradient", key=key,
                        size_labels=size_labels, kind="bytes", catalog=catalog)


@_safe
def saved_bytes_vs_batch(totals, key: str = "saved-bytes", catalog=None):
    """The saved_bytes study: the graph's saved bytes and the parameters' bytes against the
    batch size, one panel per model; the engine solid, PyTorch dashed (``totals``: the study's
    recorded ``saved-bytes`` figure, :func:`diffcompare.studies.saved_bytes.totals`)."""
    if totals is None or totals.empty or totals["batch"].nunique() < 2:
        return None
    models = list(dict.fromkeys(totals["model"]))
    with style():
        fig, axes = _figure(len(models), panel_w=3.6, panel_h=2.7, ncols_max=2)
        handles = {}
        for ax, model in zip(axes, models):
            sub = totals[totals["model"] == model]
            for lib in ("engine", "torch"):
                rows = sub[sub["library"] == lib].sort_values("batch")
                if rows.empty:
                    continue
                st = style_of(lib)
                label = f"saved by the graph ({'the engine' if lib == 'engine' else 'PyTorch'})"
                (line,) = ax.plot(rows["batch"].astype(float), rows["saved_bytes"].astype(float),
                                  color=st.colour, marker=st.marker, linestyle="-" if lib == "engine" else "--",
                                  markerfacecolor="none" if lib == "torch" else st.colour)
                handles.setdefault(label, line)
            rows = sub.drop_duplicates("batch").sort_values("batch")
            (line,) = ax.plot(rows["batch"].astype(float), rows["parameter_bytes"].astype(float),
                              color="#555555", linestyle=":", marker="s")
            handles.setdefault("parameters", line)
            _size_axis(ax, sub["batch"], "batch size")
            log_axis(ax, "bytes")
            ax.set_ylabel("bytes")
            ax.set_title(model.replace("seed", "seed "), fontsize="medium")
        _legend(fig, handles, ncol=3)
        return figure_svg(fig, key, totals)


#: The plots a study's figure may name (``View.plot``, :mod:`diffcompare.studies.common`):
#: each draws the figure's recorded rows, ``plot(frame, key=..., catalog=...) -> SVG or None``.
PLOTS = {"fd_steps": fd_step_vplot, "float_dtype_bars": float_dtype_bars,
         "expression_swell": expression_swell, "saved_bytes_vs_batch": saved_bytes_vs_batch}


def study_figure(view, catalog: dict | None = None):
    """The SVG of a study's recorded figure (``view``: a
    :class:`~diffcompare.results.studies.RecordedView`); None when it has no rows to draw.
    A figure naming a plot this version does not have is a ``KeyError`` saying so."""
    if view.plot not in PLOTS:
        raise KeyError(f"the study's figure {view.key!r} asks for plot {view.plot!r}, which this "
                       f"version of the report does not have (it has {', '.join(PLOTS)})")
    return PLOTS[view.plot](view.frame, key=view.key, catalog=catalog)

