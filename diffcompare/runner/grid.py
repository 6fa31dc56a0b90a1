"""The experiment grid: a suite expanded into groups of cells.

A *cell* is one (problem, size, seed, backend, dtype). A *group* is all the
cells of one (problem, size, seed, dtype): its backends run back to back in one
worker process, so their times are measured side by side and their ratios
mean something.  In a suite with ``device = "gpu"`` the cells asked for the GPU form a
group of their own (``Group.device == "gpu"``, run one per GPU at a time) beside the
group of the same (problem, size, seed, dtype)'s CPU cells.

Groups come out ordered by problem, dtype, size (ascending) and seed, so that a
sequential run reaches the small sizes of a backend before its large ones (a
timeout at a small size then skips the larger ones).
"""
from __future__ import annotations

import dataclasses

from . import modules as _modules


@dataclasses.dataclass(frozen=True)
class BackendSpec:
    name: str
    options: dict = dataclasses.field(default_factory=dict)
    timeout_s: float = 60.0

    @property
    def device(self) -> str:
        """The device the cell is asked to compute on (``backend_options.device``; "cpu")."""
        return (self.options.get("backend_options") or {}).get("device", "cpu")

    def to_json(self) -> dict:
        return {"name": self.name, "options": self.options, "timeout_s": self.timeout_s}


@dataclasses.dataclass(frozen=True)
class Group:
    """The backends of one (problem, size, seed, dtype), run in one worker."""

    problem: str
    size: int
    seed: int
    dtype: str
    backends: tuple          # of BackendSpec, in run order
    device: str = "cpu"      # "gpu": its backends were asked for the GPU (one group per GPU)

    @property
    def name(self) -> str:
        return f"{self.problem}/{self.size}/seed{self.seed}/{self.dtype}" + (
            "/gpu" if self.device == "gpu" else "")

    def cell_key(self, backend: str) -> tuple:
        """The (problem, size, seed, backend, dtype) key (see ``schema.CELL_COLUMNS``)."""
        return (self.problem, self.size, self.seed, backend, self.dtype)

    def with_backends(self, backends) -> "Group":
        return dataclasses.replace(self, backends=tuple(backends))

    def to_json(self) -> dict:
        return {"problem": self.problem, "size": self.size, "seed": self.seed, "dtype": self.dtype,
                "backends": [b.to_json() for b in self.backends], "device": self.device}

    @classmethod
    def from_json(cls, data: dict) -> "Group":
        return cls(problem=data["problem"], size=int(data["size"]), seed=int(data["seed"]),
                   dtype=data["dtype"], backends=tuple(BackendSpec(**b) for b in data["backends"]),
                   device=data.get("device", "cpu"))


def build_groups(suite) -> list[Group]:
    """Expand ``suite`` into groups (``sizes = "default"`` takes each problem's sweep).

    The same backend may appear in several ``[[grid]]`` blocks for one problem and
    size only with the same options (rows are keyed by backend name)."""
    from .suite import SuiteError

    _modules.import_problem_modules(suite.problem_modules, suite.base_dir)
    problem_order: dict[str, int] = {}
    cells: dict[tuple, dict[str, BackendSpec]] = {}
    for i, block in enumerate(suite.grid, 1):
        timeout_s = block.timeout_s if block.timeout_s is not None else suite.timeout_s
        for p in block.problems:
            problem_order.setdefault(p, len(problem_order))
            sizes = suite.find_problem(p).sizes if block.sizes == "default" else block.sizes
            for size in sizes:
                for dtype in suite.dtypes:
                    for seed in suite.seeds:
                        specs = cells.setdefault((p, int(size), int(seed), dtype), {})
                        for b in block.backends:
                            options = _on_device({**suite.cell_options, **block.options.get(b, {})},
                                                 b, suite.device)
                            if suite.operators:
                                options["operators"] = list(suite.operators)
                            spec = BackendSpec(b, options, timeout_s)
                            old = specs.get(b)
                            if old is not None and old != spec:
                                raise SuiteError(
                                    f"suite {suite.name!r}, [[grid]] block {i}: backend {b!r} already runs "
                                    f"problem {p!r} at size {size} with other options or timeout "
                                    f"({old.options}, {old.timeout_s} s); rows are keyed by backend name, "
                                    "so put the variant in another suite.")
                            specs.setdefault(b, spec)
    dtype_order = {d: i for i, d in enumerate(suite.dtypes)}
    seed_order = {s: i for i, s in enumerate(suite.seeds)}
    keys = sorted(cells, key=lambda k: (problem_order[k[0]], dtype_order[k[3]], k[1], seed_order[k[2]]))
    groups = []
    for (p, size, seed, dtype) in keys:
        specs = tuple(cells[(p, size, seed, dtype)].values())
        for device in ("gpu", "cpu"):      # the GPU cells in a group of their own, first
            on = tuple(s for s in specs if (s.device == "gpu") == (device == "gpu"))
            if on:
                groups.append(Group(p, size, seed, dtype, on, device))
    return groups


def _on_device(options: dict, backend: str, device: str) -> dict:
    """``options`` of ``backend``'s cells in a suite that asks for ``device``: a backend that can
    compute on the GPU is given ``backend_options.device = "gpu"`` (unless its options say
    otherwise); the others run on the CPU, and their rows say so."""
    from .. import backends

    if device != "gpu" or "gpu" not in backends.devices_of(backend):
        return options
    backend_options = dict(options.get("backend_options") or {})
    backend_options.setdefault("device", "gpu")
    return {**options, "backend_options": backend_options}


def count_cells(groups) -> int:
    return sum(len(g.backends) for g in groups)
