"""The experiment grid: a suite expanded into groups of cells.

A *cell* is one (problem, size, seed, backend, dtype). A *group* is all the
cells of one (problem, size, seed, dtype): its backends run back to back in one
worker process, so their times are measured side by side and their ratios
mean something.

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

    @property
    def name(self) -> str:
        return f"{self.problem}/{self.size}/seed{self.seed}/{self.dtype}"

    def cell_key(self, backend: str) -> tuple:
        """The (problem, size, seed, backend, dtype) key (see ``schema.CELL_COLUMNS``)."""
        return (self.problem, self.size, self.seed, backend, self.dtype)

    def with_backends(self, backends) -> "Group":
        return dataclasses.replace(self, backends=tuple(backends))

    def to_json(self) -> dict:
        return {"problem": self.problem, "size": self.size, "seed": self.seed, "dtype": self.dtype,
                "backends": [b.to_json() for b in self.backends]}

    @classmethod
    def from_json(cls, data: dict) -> "Group":
        return cls(problem=data["problem"], size=int(data["size"]), seed=int(data["seed"]),
                   dtype=data["dtype"], backends=tuple(BackendSpec(**b) for b in data["backends"]))


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
            sizes = _modules.find_problem(p).sizes if block.sizes == "default" else block.sizes
            for size in sizes:
                for dtype in suite.dtypes:
                    for seed in suite.seeds:
                        specs = cells.setdefault((p, int(size), int(seed), dtype), {})
                        for b in block.backends:
                            options = {**suite.cell_options, **block.options.get(b, {})}
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
    return [Group(p, size, seed, dtype, tuple(cells[(p, size, seed, dtype)].values()))
            for (p, size, seed, dtype) in keys]


def count_cells(groups) -> int:
    return sum(len(g.backends) for g in groups)
