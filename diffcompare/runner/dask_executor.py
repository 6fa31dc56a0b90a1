"""Run the grid's groups on a Dask cluster (``distributed``).

From the command line::

    diffcompare run --suite quick --executor dask              # a LocalCluster, one worker per core
    diffcompare run --suite quick --executor dask --workers 2
    diffcompare run --suite quick --scheduler tcp://10.0.0.5:8786   # an existing cluster

From Python::

    with DaskExecutor.local(n_workers=2) as executor:             # doctest: +SKIP
        run_suite("quick", "results/quick", executor=executor)

Each group is one Dask task. The task drives the same isolated worker process as the
local executor (:class:`~diffcompare.runner.supervisor.GroupRunner`: one BLAS thread,
time limits, a crash or timeout becomes a row) on the Dask worker's host, and returns
the group's rows; the driver appends them to the results log as results arrive, so a
run stopped at any point resumes like a local one (with either executor).

- **One group per core.** A task claims a CPU of its host for the group's worker
  process (:func:`cpu_slot`: a lock file per CPU, shared by every Dask worker of the
  host), so however many workers and threads a cluster has, no two groups time on
  one core, and groups on one host spread over its cores.
- **Dead workers.** A Dask worker that dies (killed, its machine gone) takes its
  running group with it; the scheduler runs that group again on another worker. A
  group whose worker died more than ``distributed.scheduler.allowed-failures`` times
  (default 3) is recorded as ``crashed``. Rows of a group reach the log only when the
  whole group comes back, and appends are idempotent per cell, so nothing is lost or
  written twice.
- **Provenance.** Every row records its ``executor`` (``"dask"``) and the ``host``
  whose worker measured it; :func:`diffcompare.results.provenance.mixed_hosts_message`
  says when timings come from more than one host.
- Problem modules and cell functions named by path must exist at the same path on
  every worker host (a shared file system), and the workers need diffcompare installed.
"""
from __future__ import annotations

import contextlib
import itertools
import secrets
import sys
import threading

from .cpu_slots import cpu_slot, usable_cpus
from .executor import Executor
from ..results.schema import make_row
from .supervisor import GroupResult

#: How long ``--scheduler`` waits to connect, and then for a first worker.
CONNECT_TIMEOUT_S = 15.0
WORKER_WAIT_S = 60.0


class DaskSetupError(RuntimeError):
    """Dask is missing or the cluster cannot be reached; the message says what to do."""


def _distributed():
    try:
        import distributed
    except ImportError as exc:
        raise DaskSetupError(
            f"the dask executor needs the 'distributed' package ({exc}); install it with "
            "pip install 'diffcompare[dask]'.") from None
    return distributed


# --- the task, on a Dask worker ------------------------------------------------------------

_ACTIVE: dict = {}                 # run_id -> set of GroupRunner running in this process
_ACTIVE_LOCK = threading.Lock()


def run_group_task(runner, group) -> GroupResult:
    """Run ``group`` with the detached ``runner`` on this (Dask worker's) host."""
    runner.python = sys.executable          # this host's interpreter, not the driver's
    with _ACTIVE_LOCK:
        _ACTIVE.setdefault(runner.run_id, set()).add(runner)
    try:
        with cpu_slot(runner.cancelled):
            return runner(group)
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.get(runner.run_id, set()).discard(runner)


def cancel_run(run_id: str) -> int:
    """Kill the worker processes of ``run_id``'s groups running in this process."""
    with _ACTIVE_LOCK:
        runners = list(_ACTIVE.get(run_id, ()))
    for runner in runners:
        runner.cancel()
    return len(runners)


# --- the executor, in the driver -----------------------------------------------------------

class DaskExecutor(Executor):
    """Runs groups as tasks on a ``distributed`` cluster (see the module's docstring).

    ``client`` is a ``distributed.Client``; :meth:`local` and :meth:`connect` make one.
    Use it as a context manager (or call :meth:`close`) to close what it started."""

    name = "dask"

    def __init__(self, client, cluster=None, owns_client: bool = False):
        self.client = client
        self.cluster = cluster
        self._owns_client = owns_client

    @classmethod
    def local(cls, n_workers: int | None = None) -> "DaskExecutor":
        """A ``LocalCluster`` of worker processes, one thread each, one per usable core
        unless ``n_workers`` is given."""
        distributed = _distributed()
        n = len(usable_cpus()) if n_workers is None else int(n_workers)
        if n < 1:
            raise DaskSetupError(f"--workers must be at least 1, got {n_workers}.")
        # memory_limit=0: the suite's memory_limit_mb limits each group's worker process;
        # a nanny limit would kill the Dask worker (and rerun its group) instead.
        # No dashboard; the scheduler's small HTTP server (health routes) on a free port
        # rather than 8787, which another cluster may hold.
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                           dashboard_address=None, memory_limit=0,
                                           scheduler_kwargs={"dashboard_address": "127.0.0.1:0"})
        try:
            client = distributed.Client(cluster)
        except BaseException:
            cluster.close()
            raise
        return cls(client, cluster, owns_client=True)

    @classmethod
    def connect(cls, address: str, timeout_s: float | None = None,
                worker_wait_s: float | None = None) -> "DaskExecutor":
        """The cluster whose scheduler listens at ``address`` (``tcp://host:port``)."""
        distributed = _distributed()
        timeout_s = CONNECT_TIMEOUT_S if timeout_s is None else timeout_s
        worker_wait_s = WORKER_WAIT_S if worker_wait_s is None else worker_wait_s
        try:
            client = distributed.Client(address, timeout=f"{timeout_s}s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise DaskSetupError(
                f"could not connect to the Dask scheduler at {address} within {timeout_s:g} s "
                f"({type(exc).__name__}: {exc}); start one with `dask scheduler` and workers with "
                f"`dask worker {address}`, or use --executor dask without --scheduler for a local "
                "cluster.") from None
        try:
            client.wait_for_workers(1, timeout=worker_wait_s)
        except (TimeoutError, OSError):
            client.close()
            raise DaskSetupError(
                f"the Dask scheduler at {address} has no workers after {worker_wait_s:g} s; "
                f"start some with `dask worker {address}`.") from None
        return cls(client, owns_client=True)

    def close(self):
        if self._owns_client:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _slots(self) -> int:
        """Groups to keep in flight: one per worker thread (each waits for a CPU slot)."""
        try:
            return max(1, sum(self.client.nthreads().values()))
        except Exception:
            return 1

    def map_groups(self, groups, run_group):
        distributed = _distributed()
        pending = iter(groups)
        running = distributed.as_completed()
        futures: dict = {}                     # future -> its group
        batch = secrets.token_hex(3)
        counter = itertools.count()
        finished = False

        def submit(group):
            remote = run_group.detached()      # carries the timeouts seen so far
            remote.executor = self.name
            future = self.client.submit(run_group_task, remote, group, pure=False,
                                        key=f"diffcompare-{group.name}-{batch}-{next(counter)}")
            futures[future] = group
            running.add(future)

        try:
            def top_up():                     # keep one group per worker thread in flight
                for group in itertools.islice(pending, max(0, self._slots() - len(futures))):
                    submit(group)

            top_up()
            for future in running:
                group = futures.pop(future)
                try:
                    result = future.result()
                except distributed.KilledWorker as exc:
                    result = self._crashed(group, exc, run_group.run_id)
                top_up()                      # before yielding: the driver writes meanwhile
                yield result
            finished = True
        finally:
            if not finished:
                cancel = getattr(run_group, "cancel", None)
                if cancel is not None:
                    cancel()
                self.client.cancel(list(futures))
                with contextlib.suppress(Exception):
                    self.client.run(cancel_run, run_group.run_id)   # kill groups in progress

    def _crashed(self, group, exc, run_id) -> GroupResult:
        """Every cell of a group whose Dask workers kept dying, as a ``crashed`` row."""
        last = getattr(exc, "last_worker", None)
        where = getattr(last, "address", None) or "an unknown worker"
        message = (f"crashed: the Dask worker running this group died (last on {where}), and the "
                   f"scheduler gave up on it ({exc}); the group's cells were not measured.")
        rows, cells = [], {}
        for spec in group.backends:
            row = make_row(run_id=run_id, problem=group.problem, size=group.size, seed=group.seed,
                           backend=spec.name, dtype=group.dtype, phase="cell", status="crashed",
                           message=message, executor=self.name,
                           extra={"options": spec.options} if spec.options else None)
            rows.append(row)
            cells[spec.name] = "crashed"
        return GroupResult(group, rows, cells, written=False)

    def __repr__(self):
        return f"DaskExecutor({self.client!r})"
