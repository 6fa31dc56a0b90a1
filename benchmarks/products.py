"""Derivative products against the gradient: bundle adjustment's full Jacobian and k-means'
Hessian diagonal, per method and size, through the runner (each (problem, size) in one
isolated single-threaded worker, its methods back to back, so ratios are side by side).

    python benchmarks/products.py                         # BA sizes 1, 2, 8; k-means 2, 8, 32
    python benchmarks/products.py --ba 2 8 --kmeans 8 32 --samples 3
    python benchmarks/products.py --results /tmp/products # keep the results folder

It prints one line per (problem, size, method): the product's median seconds, the gradient's
(the VJP for bundle adjustment), their ratio, the product's error (ρ against its reference:
cᵀJ against the reference VJP; the exact 2 × cluster counts) and the status with its reason
where the product was not measured (a declared limit, no method).
"""
from __future__ import annotations

import argparse
import tempfile

BACKENDS = ("engine", "jax-jit", "torch", "jax-jacfwd", "engine-jvp", "jax-eager", "fd-central")


def run(ba_sizes, kmeans_sizes, backends, samples, min_sample_s, results_dir):
    from diffcompare.results import load
    from diffcompare.runner import run_suite
    from diffcompare.runner.suite import GridBlock, Suite

    grid = tuple(GridBlock(problems=(p,), backends=tuple(backends), sizes=tuple(sizes))
                 for p, sizes in (("bundle_adjustment", ba_sizes), ("kmeans", kmeans_sizes)) if sizes)
    suite = Suite(name="products", grid=grid, timeout_s=300.0,
                  cell_options={"samples": samples, "min_sample_s": min_sample_s})
    suite.validate()
    run_suite(suite, results_dir, fresh=True, progress=False, run_studies=False)
    return load(results_dir).rows


def table(rows) -> str:
    from diffcompare.results.schema import PRODUCT_PHASES

    lines = [f"{'problem':<18} {'size':>4}  {'method':<11} {'product':<16} {'product s':>10} "
             f"{'gradient s':>10} {'ratio':>8}  {'error ρ':>8}  status"]
    by_key = {(r["problem"], r["size"], r["backend"], r["phase"]): r for r in rows.to_dict("records")}
    for (problem, size, backend, phase), r in by_key.items():
        if phase not in PRODUCT_PHASES:
            continue
        grad = by_key.get((problem, size, backend, "gradient"), {})
        p_s, g_s = r.get("time_median_s"), grad.get("time_median_s")
        ok = r["status"] == "ok"
        ratio = f"{p_s / g_s:8.1f}" if ok and g_s else f"{'':>8}"
        err = r.get("error_rho")
        lines.append(f"{problem:<18} {size:>4}  {backend:<11} {phase:<16} "
                     f"{_s(p_s if ok else None):>10} {_s(g_s):>10} {ratio}  "
                     f"{'' if err is None or err != err else f'{err:.1e}':>8}  "
                     f"{'ok' if ok else r['status'] + ': ' + str(r['message'])[:90]}")
    return "\n".join(lines)


def _s(v):
    return "" if v is None or v != v else f"{v:.2e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ba", type=int, nargs="*", default=[1, 2, 8], help="bundle adjustment sizes")
    ap.add_argument("--kmeans", type=int, nargs="*", default=[2, 8, 32], help="k-means sizes")
    ap.add_argument("--backends", nargs="+", default=list(BACKENDS))
    ap.add_argument("--samples", type=int, default=5)
    ap.add_argument("--min-sample-s", type=float, default=0.02)
    ap.add_argument("--results", default=None, help="results folder (default: a temporary one)")
    args = ap.parse_args(argv)
    results = args.results or tempfile.mkdtemp(prefix="diffcompare-products-")
    rows = run(args.ba, args.kmeans, args.backends, args.samples, args.min_sample_s, results)
    print(table(rows))
    print(f"(results in {results})")


if __name__ == "__main__":
    main()
