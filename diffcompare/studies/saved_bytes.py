"""How much the graph keeps as the batch grows: saved bytes per node against the batch size.

Seed 000 asks "Are all batch_size activations saved during the forward step?" and wants "some
way of visualizing how much is actually being saved in the graph".  This study builds the
seed threads' two models at batch sizes 1, 8, 64, 512 (quick; 4096 too otherwise), in
float32 as the threads did, on the engine's torch face and on PyTorch (when installed):

- ``seed000``: y = x·w, L = y.mean() (thread 000: x a batch, w one weight);
- ``seed001``: the lesson's lin → relu → lin → MSE (thread 001), on a batch of 3 features.

The inputs and targets need no gradient (data); the weights and biases are the parameters.
For each graph it records every tensor saved for backward, per node (the engine's
``node.saved``, :mod:`diffcompare.engine.graph`; PyTorch's ``_saved_*`` attributes), and the
total the graph holds: the engine counts shared memory once
(:func:`diffcompare.engine.graph.summarize`); PyTorch's total comes from
``torch.autograd.graph.saved_tensors_hooks``, each saved tensor's bytes counted once by its
storage.  Beside it, the parameters' bytes.

Rows: ``model, library, batch, kind, node_index, node, tensor, shape, nbytes, shared,
parameter``.  ``kind`` is ``saved`` (one saved tensor: ``shared`` when an earlier node
saved the same memory, ``parameter`` when it is a parameter's memory), ``total`` (the
graph's saved bytes, in ``nbytes``) or ``parameters`` (the parameters' bytes).

>>> from diffcompare.studies import saved_bytes
>>> df = saved_bytes.run(quick=True)                                   # doctest: +SKIP
>>> saved_bytes.per_sample(df, "seed000", "engine")                    # doctest: +SKIP
"""
from __future__ import annotations

import numpy as np

from ..units import fmt_bytes
from .common import Finding, View, fmt, no_data

NAME = "saved_bytes"
TITLE = "How much the graph keeps as the batch grows"
EXPECTED = (
    "Backward needs the activations of every sample, so the bytes a graph saves grow linearly "
    "with the batch: a fixed number of bytes per sample per node (the activations and inputs "
    "the node's derivative reads) plus a constant (a parameter a node saves, e.g. the weight of "
    "a matrix product whose input needs a gradient). The parameters' own bytes do not depend on "
    "the batch, so their share of what training holds falls as the batch grows. The engine and "
    "PyTorch save the same tensors for these models, so their totals agree at every batch size.")

BATCHES_QUICK = (1, 8, 64, 512)
BATCHES = (1, 8, 64, 512, 4096)
MODELS = ("seed000", "seed001")
COLUMNS = ["model", "library", "batch", "kind", "node_index", "node", "tensor", "shape", "nbytes",
           "shared", "parameter"]


def seed000(torch, batch: int):
    """Thread 000's model: ``L = mean(x·w)`` over a batch ``x``; returns ``(L, parameters)``."""
    w = torch.tensor([2.], requires_grad=True)
    x = torch.linspace(1., 2., batch)
    return torch.mul(x, w).mean(), [w]


def seed001(torch, batch: int):
    """Thread 001's model: ``mse(relu(inp @ w1 + b1) @ w2 + b2, target)``; returns ``(loss, parameters)``."""
    inp = torch.linspace(-1., 1., batch * 3).view(batch, 3)
    w1 = torch.tensor([[0.5, -0.3], [0.2, 0.8], [-0.6, 0.1]], requires_grad=True)
    b1 = torch.tensor([0.5, -0.5], requires_grad=True)
    w2 = torch.tensor([[1.2], [-0.7]], requires_grad=True)
    b2 = torch.tensor([0.1], requires_grad=True)
    target = torch.linspace(-1., 1., batch).view(batch, 1)
    out = (inp @ w1 + b1).relu() @ w2 + b2
    return torch.nn.functional.mse_loss(out, target), [w1, b1, w2, b2]


_BUILD = {"seed000": seed000, "seed001": seed001}
#: What each model is, for the report's sentence.
DESCRIPTION = {"seed000": "seed 000's L = mean(x·w)",
               "seed001": "seed 001's lin → relu → lin → MSE"}


def _memory(lib, t):
    """``(key, bytes)`` of the memory behind tensor ``t``: the engine's root NumPy buffer,
    PyTorch's storage."""
    if lib.name == "torch":
        s = t.untyped_storage()
        return s.data_ptr(), int(s.nbytes())
    arr = np.asarray(t)
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    return root.__array_interface__["data"][0], int(root.nbytes)


def _graph_rows(lib, model: str, batch: int) -> list:
    torch = lib.torch
    packed = {}
    if lib.name == "torch":
        def pack(t):
            key, nbytes = _memory(lib, t)
            packed[key] = nbytes
            return t

        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            root, params = _BUILD[model](torch, batch)
    else:
        root, params = _BUILD[model](torch, batch)
    from ..engine import graph

    view = lib.view
    param_memory = {_memory(lib, lib.array(p) if lib.name == "engine" else p.detach())[0] for p in params}
    base = {"model": model, "library": lib.name, "batch": batch}
    rows, seen = [], set()
    for i, node in enumerate(graph.nodes(root)):     # reads only next_functions: torch's too
        for name, array, tensor, _is_result in view.saved(node):
            key, _ = _memory(lib, array if lib.name == "engine" else tensor.detach())
            rows.append({**base, "kind": "saved", "node_index": i, "node": view.name(node), "tensor": name,
                         "shape": "x".join(str(int(d)) for d in array.shape) or "scalar",
                         "nbytes": int(array.nbytes), "shared": key in seen, "parameter": key in param_memory})
            seen.add(key)
    if lib.name == "torch":
        total = sum(packed.values())
    else:
        total = graph.summarize(root).total_saved_bytes
    rows.append({**base, "kind": "total", "nbytes": int(total)})
    rows.append({**base, "kind": "parameters", "nbytes": int(sum(lib.array(p).nbytes for p in params))})
    return rows


def run(out_dir=None, quick: bool = False, batches=None):
    import pandas as pd

    from ..viz.libs import libs

    batches = tuple(batches or (BATCHES_QUICK if quick else BATCHES))
    bad = [b for b in batches if not isinstance(b, (int, np.integer)) or b < 1]
    if bad or len(set(batches)) < 2:
        raise ValueError(f"saved_bytes needs two or more distinct positive integer batch sizes; got "
                         f"{list(batches)}: pass e.g. batches=(1, 8, 64, 512)")
    rows = []
    for lib in libs():
        for model in MODELS:
            for b in sorted(set(batches)):
                rows += _graph_rows(lib, model, int(b))
    return pd.DataFrame(rows, columns=COLUMNS)


# --- reading the rows -------------------------------------------------------------------

def totals(df):
    """``model, library, batch, saved_bytes, parameter_bytes, parameter_share``: one row per graph
    (the figure's data)."""
    import pandas as pd

    t = df[df["kind"] == "total"][["model", "library", "batch", "nbytes"]].rename(columns={"nbytes": "saved_bytes"})
    p = df[df["kind"] == "parameters"][["model", "library", "batch", "nbytes"]].rename(
        columns={"nbytes": "parameter_bytes"})
    out = pd.merge(t, p, on=["model", "library", "batch"], how="outer").sort_values(["model", "library", "batch"])
    out["parameter_share"] = out["parameter_bytes"] / (out["parameter_bytes"] + out["saved_bytes"])
    return out.reset_index(drop=True)


def per_sample(df, model: str, library: str):
    """Each saved tensor's bytes per sample and its constant part, from the smallest and the
    largest batch: ``node_index, node, tensor, per_sample, constant, shared, parameter``."""
    import pandas as pd

    s = df[(df["kind"] == "saved") & (df["model"] == model) & (df["library"] == library)]
    if s.empty or s["batch"].nunique() < 2:
        return pd.DataFrame(columns=["node_index", "node", "tensor", "per_sample", "constant", "shared",
                                     "parameter"])
    lo, hi = s["batch"].min(), s["batch"].max()
    a = s[s["batch"] == lo].set_index(["node_index", "tensor"])
    b = s[s["batch"] == hi].set_index(["node_index", "tensor"])
    slope = (b["nbytes"] - a["nbytes"]) / (hi - lo)
    out = pd.DataFrame({"node": b["node"], "per_sample": slope, "constant": b["nbytes"] - slope * hi,
                        "shared": b["shared"].astype(bool), "parameter": b["parameter"].astype(bool)})
    return out.reset_index()


def sentence(df, model: str, library: str = "engine") -> str:
    """The answer the thread wanted, from the rows: which tensors the graph keeps for each
    sample, and what stays constant."""
    ps = per_sample(df, model, library)
    tot = totals(df)
    tot = tot[(tot["model"] == model) & (tot["library"] == library)]
    if ps.empty or tot.empty:
        return f"No {library} rows for {model}."
    fit = _affine(tot["batch"], tot["saved_bytes"])
    grows = [f"{r.node} {r.tensor} {fmt_bytes(r.per_sample)}" + (" (the same memory as an earlier node's, counted once)"
                                                          if r.shared else "")
             for r in ps.itertuples() if r.per_sample > 0]
    const = [f"{r.node} {r.tensor} {fmt_bytes(r.constant)}" + (" (a parameter)" if r.parameter else "")
             for r in ps.itertuples() if r.per_sample == 0]
    params = tot["parameter_bytes"].iloc[0]
    who = {"engine": "the engine", "torch": "PyTorch"}.get(library, library)
    text = (f"{DESCRIPTION.get(model, model)} on {who}: yes, every sample's tensors are saved — "
            f"the graph keeps {fmt_bytes(fit[0])} per sample ({'; '.join(grows) or 'nothing'})")
    text += (f", plus {fmt_bytes(fit[1])} whatever the batch ({'; '.join(const)})" if const else
             ", and nothing whatever the batch")
    share = tot.sort_values("batch")["parameter_share"]
    text += (f". The parameters hold {fmt_bytes(params)} at every batch size: {share.iloc[0]:.0%} of saved + parameter "
             f"bytes at batch {int(tot['batch'].min())}, {share.iloc[-1]:.1%} at batch {int(tot['batch'].max())}.")
    return text


def per_sample_all(df):
    """:func:`per_sample` of every model and library, with ``model`` and ``library`` columns."""
    import pandas as pd

    parts = [per_sample(df, m, lib).assign(model=m, library=lib)
             for m in dict.fromkeys(df["model"]) for lib in ("engine", "torch")
             if lib in set(df["library"])]
    parts = [x for x in parts if len(x)]
    columns = ["model", "library", "node_index", "node", "tensor", "per_sample", "constant", "shared",
               "parameter"]
    return pd.concat(parts, ignore_index=True)[columns] if parts else pd.DataFrame(columns=columns)


def answers(df):
    """The thread's answer per model (:func:`sentence`, the engine's; else the first library's):
    ``model, library, text``."""
    import pandas as pd

    libraries = [lib for lib in ("engine", "torch") if lib in set(df["library"])]
    return pd.DataFrame([{"model": m, "library": libraries[0], "text": sentence(df, m, libraries[0])}
                         for m in dict.fromkeys(df["model"])] if libraries else [],
                        columns=["model", "library", "text"])


#: What the report shows of this study (recorded with it: :func:`diffcompare.studies.record_views`).
FIGURES = (View("saved-bytes", "Bytes the graph saves for backward and the parameters' bytes against the "
                "batch size (log-log), per seed model; the engine solid, PyTorch dashed.",
                plot="saved_bytes_vs_batch", data=totals),)
TABLES = (View("answers", data=answers), View("per-sample", data=per_sample_all))


def _affine(batch, nbytes):
    """``(per_sample, constant, max relative residual)`` of the least-squares line bytes = a·batch + c."""
    x, y = np.asarray(batch, dtype=float), np.asarray(nbytes, dtype=float)
    a, c = np.polyfit(x, y, 1)
    resid = float(np.max(np.abs(a * x + c - y) / np.maximum(y, 1)))
    return float(round(a, 6)), float(round(c, 6)), resid


# --- checks -----------------------------------------------------------------------------

def check(df) -> list:
    findings = []
    tot = totals(df)
    for model in MODELS:
        for library in ("engine", "torch"):
            t = tot[(tot["model"] == model) & (tot["library"] == library)]
            name = f"{model} {library}: saved bytes linear in the batch"
            expected = "saved bytes = (bytes per sample) × batch + constant, exactly, with bytes per sample > 0"
            if len(t) < 2:
                findings.append(no_data(name, expected, f"no {library} rows at two batch sizes"))
                continue
            a, c, resid = _affine(t["batch"], t["saved_bytes"])
            findings.append(Finding(name, expected,
                                    f"{fmt(a)} B per sample + {fmt(c)} B; largest relative residual "
                                    f"{fmt(resid)} over batches {', '.join(str(int(b)) for b in t['batch'])}",
                                    a > 0 and resid < 1e-9))
            name = f"{model} {library}: parameters constant, their share falls"
            expected = "the parameters' bytes are the same at every batch size; their share of all bytes falls"
            share = t.sort_values("batch")["parameter_share"].to_numpy()
            findings.append(Finding(name, expected,
                                    f"parameter bytes {sorted(set(int(v) for v in t['parameter_bytes']))}; share "
                                    f"{share[0]:.3g} at batch {int(t['batch'].min())} → {share[-1]:.3g} at "
                                    f"batch {int(t['batch'].max())}",
                                    t["parameter_bytes"].nunique() == 1 and bool(np.all(np.diff(share) < 0))))
        findings.append(_agree(df, tot, model))
    return findings


def _saved_signature(df, model, library, batch):
    s = df[(df["kind"] == "saved") & (df["model"] == model) & (df["library"] == library) & (df["batch"] == batch)]
    return sorted((str(r.tensor), str(r.shape), int(r.nbytes), bool(r.shared)) for r in s.itertuples())


def _agree(df, tot, model) -> Finding:
    name = f"{model}: engine and torch totals"
    expected = "the same total at every batch size where both save the same tensors"
    e, t = (tot[(tot["model"] == model) & (tot["library"] == lib)].set_index("batch") for lib in ("engine", "torch"))
    both = sorted(set(e.index) & set(t.index))
    if not both:
        return no_data(name, expected, "torch not installed" if t.empty else "no engine rows")
    same, differ, notes = [], [], []
    for b in both:
        if int(e.loc[b, "saved_bytes"]) == int(t.loc[b, "saved_bytes"]):
            same.append(b)
            continue
        differ.append(b)
        se, st = _saved_signature(df, model, "engine", b), _saved_signature(df, model, "torch", b)
        if se != st:
            only_e = [x for x in se if x not in st]
            only_t = [x for x in st if x not in se]
            notes.append(f"batch {b}: they save different tensors (engine only: {only_e or 'none'}; torch only: "
                         f"{only_t or 'none'})")
        else:
            notes.append(f"batch {b}: same tensors, different totals "
                         f"({int(e.loc[b, 'saved_bytes'])} B against {int(t.loc[b, 'saved_bytes'])} B)")
    measured = (f"equal at batches {', '.join(str(int(b)) for b in same) or 'none'}"
                + (f"; differ at {', '.join(str(int(b)) for b in differ)}: {'; '.join(notes)}" if differ else "")
                + f" (e.g. {int(e.loc[both[-1], 'saved_bytes'])} B on both at batch {int(both[-1])})"
                * (not differ))
    explained = all("different tensors" in n for n in notes)
    return Finding(name, expected, measured, not differ or explained)
