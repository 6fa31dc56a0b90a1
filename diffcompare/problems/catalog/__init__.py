"""The shipped problems.  Importing this package registers them (each module calls
``register``); ``diffcompare.problems.all_problems()`` imports it on first use.

- ``seeds``: the four forum threads the project grew from (tag ``seed``);
- ``classic``: textbook test functions (Rosenbrock, Squire–Trapp, log-sum-exp, ...);
- ``neural``: small networks (MLPs, a recurrent loop);
- ``nonsmooth``: relu, abs and max evaluated exactly at and next to their kinks;
- ``adbench``: ADBench's GMM, bundle adjustment and LSTM objectives at real sizes;
- ``fitting``: k-means and linear least squares.
"""
from . import seeds, classic, neural, nonsmooth, adbench, fitting  # noqa: F401,I001  (registration order)

__all__ = ["seeds", "classic", "neural", "nonsmooth", "adbench", "fitting"]
