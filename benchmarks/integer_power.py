"""Integer powers: NumPy's ``power`` against the engine's repeated multiplication
(``ops.elementwise.power``) and cumulative-product table (``power_by_table``).

    python benchmarks/integer_power.py
    python benchmarks/integer_power.py --n 1000 --degree 127

It prints, per case, the median microseconds of NumPy's ``power`` and of the engine's
kernel on arrays (the forward alone: products for mixed-sign or small k, else NumPy's own
``power``), the largest error in ulps against NumPy's ``power``,
then the gradient of a Vandermonde objective built both ways people write it (a loop of
``t[:, None] ** j`` over Python ints j, and ``t[:, None] ** np.arange(degree + 1)``) with
the engine eager and with torch eager, single-threaded.
"""
from __future__ import annotations

import argparse
import os
import timeit

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def _median_us(fn, number):
    times = timeit.repeat(fn, number=number, repeat=7)
    return float(np.median(times)) / number * 1e6


def _ulps(ours, exact):
    """The largest difference in units of the last place of ``exact``'s own dtype."""
    spacing = np.spacing(np.maximum(np.abs(exact), np.finfo(exact.dtype).tiny))
    return float(np.max(np.abs(ours.astype(np.float64) - exact) / spacing))


def kernels(n, degree):
    from diffcompare.engine.ops.elementwise import power, power_by_table

    rng = np.random.default_rng(0)
    bases = {"mixed-sign": rng.uniform(-1.5, 1.5, n), "positive": rng.uniform(0.5, 1.5, n),
             "float32": rng.uniform(-1.5, 1.5, n).astype(np.float32)}
    for label, x in bases.items():
        for k in (3, 7, 31, degree):
            number = max(1, 20000 // n)
            print(f"x ** {k:<4} n={n:<6} {label:10} numpy {_median_us(lambda: x ** k, number):9.1f} us"
                  f"   engine {_median_us(lambda: power(x, k), number):9.1f} us   "
                  f"{_ulps(power(x, k), x ** k):5.0f} ulps")
    t = rng.uniform(-1, 1, n)[:, None]   # mixed signs (a non-negative t takes NumPy's power)
    j = np.arange(degree + 1)
    number = max(1, 2000 // n)
    print(f"t[:, None] ** arange({degree + 1}) n={n}: numpy "
          f"{_median_us(lambda: t ** j, number):9.1f} us   table "
          f"{_median_us(lambda: power_by_table(t, j), number):9.1f} us   "
          f"{_ulps(power_by_table(t, j), t ** j.astype(float)):5.0f} ulps")


def vandermonde(n, degree):
    import torch

    from diffcompare.engine import Tensor, autograd

    torch.set_num_threads(1)
    rng = np.random.default_rng(1)
    t = rng.uniform(-1, 1, n)
    c = rng.standard_normal(degree + 1)
    j = np.arange(degree + 1)

    def engine_loop():
        x = Tensor(t, requires_grad=True)
        cols = [x[:, None] ** int(k) for k in j]
        from diffcompare.engine import ops
        v = ops.concatenate(cols, axis=1)
        autograd.grad(((v @ c) ** 2).sum(), [x])

    def engine_array():
        x = Tensor(t, requires_grad=True)
        v = x[:, None] ** j
        autograd.grad(((v @ c) ** 2).sum(), [x])

    tc, jt = torch.tensor(c), torch.tensor(j)

    def torch_loop():
        x = torch.tensor(t, requires_grad=True)
        v = torch.cat([x[:, None] ** int(k) for k in j], dim=1)
        torch.autograd.grad(((v @ tc) ** 2).sum(), [x])

    def torch_array():
        x = torch.tensor(t, requires_grad=True)
        v = x[:, None] ** jt
        torch.autograd.grad(((v @ tc) ** 2).sum(), [x])

    number = max(1, 200 // degree)
    for name, fn in (("engine loop ", engine_loop), ("torch loop  ", torch_loop),
                     ("engine array", engine_array), ("torch array ", torch_array)):
        print(f"Vandermonde gradient n={n} degree={degree} {name}: {_median_us(fn, number):9.1f} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--degree", type=int, default=127)
    args = parser.parse_args()
    for n in args.n:
        kernels(n, args.degree)
    for n in args.n:
        vandermonde(n, args.degree)


if __name__ == "__main__":
    main()
