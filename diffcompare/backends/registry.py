"""Every method, described once: the one table the rest of the package reads.

Each :class:`MethodInfo` says what a method *is* -- its name, family, mode, whether it is
exact, its accuracy class and equivalence tolerance, its colour and marker, how it computes
a gradient (and, for some, why nothing else), the optional library it needs, the namespace and devices it runs on, its
function evaluations per gradient and the baselines its preparation is weighed against --
and where its class lives.  The registry (``backends.names``/``get``), ``catalog.json``'s
method facts, the plot styles, the exact families, the studies' accuracy classes,
evaluation counts and break-even pairs, the equivalence tests' tolerances and the operator
table's gradient cells are all generated from it (``tests/backends/test_registry.py``
checks that every listing agrees).  Adding a method is its own module plus one entry here.

Reading a description imports nothing: no backend module, no optional library.

>>> METHODS["fd-central"].exact, METHODS["fd-central"].accuracy, METHODS["fd-central"].family
(False, 'central', 'finite-difference')
>>> METHODS["jax-jacfwd"].mode, METHODS["jax-jit"].extra, METHODS["jax-jit"].devices
('forward', 'jax', ('cpu', 'gpu'))
>>> METHODS["fd-forward"].evaluations_label, METHODS["fd-forward"].evaluations_for(10)
('n+1', 11)
>>> info("fd-centre")            # doctest: +ELLIPSIS
Traceback (most recent call last):
...
KeyError: "unknown backend 'fd-centre'; known backends: engine, manual, ..."
"""
from __future__ import annotations

import dataclasses
import re

#: the families a method belongs to (the ``family`` column of every results row)
FAMILIES = ("engine", "manual", "symbolic", "finite-difference", "jax", "torch", "autograd")
FD_FAMILY = "finite-difference"
#: how derivatives accumulate: a backward pass per output, or a JVP per input
MODES = ("reverse", "forward")
#: accuracy classes (the accuracy study's bounds are keyed by them): "exact" up to rounding
#: (AD, symbolic, hand-written), the complex step (exact up to rounding in practice, but a
#: step method), the finite-difference schemes, and "reduced-precision": exact AD whose
#: float32 matrix products round to fewer bits (TF32's 10-bit mantissa, ~1e-3 relative)
ACCURACY_CLASSES = ("exact", "complex-step", "central", "forward", "richardson",
                    "reduced-precision")
REDUCED_PRECISION = "reduced-precision"
_PACKAGE = "diffcompare.backends"


@dataclasses.dataclass(frozen=True)
class MethodInfo:
    """What one method is.  Every field is required except the ones with a default, and
    each is checked when the entry is made (a missing or unknown fact fails at import)."""

    #: the method's name, also its class's ``name``
    name: str
    #: ``"module:Class"`` inside :mod:`diffcompare.backends`, imported on first use
    implementation: str
    family: str
    #: "reverse", "forward", or None (symbolic and finite-difference methods)
    mode: str | None
    #: accuracy class (``ACCURACY_CLASSES``), None for a method the accuracy study cannot
    #: bound (numdifftools' adaptive steps)
    accuracy: str | None
    #: bound on ρ against the engine in the equivalence tests (``tests/test_equivalence.py``)
    tolerance: float
    #: plot style: a colour-blind-safe colour and a marker no other method uses
    colour: str
    marker: str
    #: how it computes a gradient and a pullback (the operators table's gradient cells)
    gradient: str
    #: the ``pip install 'diffcompare[extra]'`` it needs, None for the core dependencies
    extra: str | None = None
    #: the namespace ``problem.fn(xp, ...)`` runs on (a key of ``problems.contract.RUNS_ON``)
    namespace: str = "numpy"
    #: ``device=`` constructor values (the first is the default); the runner gives
    #: ``device="gpu"`` to the methods that list it when a suite asks for the GPU
    devices: tuple = ("cpu",)
    #: function evaluations per gradient as ``(per input, constant)`` (``n + 1`` is
    #: ``(1, 1)``), None when it is not a fixed count of evaluations
    evaluations: tuple | None = None
    #: methods whose cheaper preparation this one's faster calls are weighed against
    #: (the break-even study's pairs)
    breakeven: tuple = ()
    #: why it computes gradients and pullbacks only, when it does: the operator table
    #: refuses its other operators with this reason (None: its cells say per operator)
    gradient_only: str | None = None

    def __post_init__(self):
        def bad(fact, value, allowed):
            raise ValueError(f"method {self.name!r}: {fact} {value!r} is not one of "
                             f"{', '.join(map(repr, allowed))}")

        if ":" not in self.implementation:
            raise ValueError(f"method {self.name!r}: implementation {self.implementation!r} "
                             "must be 'module:Class' (a module of diffcompare.backends)")
        if self.family not in FAMILIES:
            bad("family", self.family, FAMILIES)
        if self.mode is not None and self.mode not in MODES:
            bad("mode", self.mode, MODES + (None,))
        if self.accuracy is not None and self.accuracy not in ACCURACY_CLASSES:
            bad("accuracy", self.accuracy, ACCURACY_CLASSES + (None,))
        if not (isinstance(self.tolerance, float) and 0 < self.tolerance < 1):
            raise ValueError(f"method {self.name!r}: tolerance must be a float in (0, 1), "
                             f"not {self.tolerance!r}")
        if not re.fullmatch(r"#[0-9A-F]{6}", self.colour):
            raise ValueError(f"method {self.name!r}: colour {self.colour!r} must be '#RRGGBB'")
        if not self.marker or not self.gradient or not self.devices or self.devices[0] != "cpu":
            raise ValueError(f"method {self.name!r}: give a marker, the gradient's 'how', and "
                             "devices starting with 'cpu'")
        if self.family == FD_FAMILY and self.exact:
            raise ValueError(f"method {self.name!r}: a finite difference is not exact")

    @property
    def exact(self) -> bool:
        """Exact up to rounding (AD, symbolic, hand-written), not an approximation."""
        return self.accuracy == "exact"

    @property
    def module(self) -> str:
        return f"{_PACKAGE}.{self.implementation.split(':')[0]}"

    @property
    def class_name(self) -> str:
        return self.implementation.split(":")[1]

    @property
    def evaluations_label(self) -> str | None:
        """``"n+1"``, ``"2n"``, ``"n"``: the evaluations per gradient, as the textbook writes them."""
        if self.evaluations is None:
            return None
        per, constant = self.evaluations
        label = "n" if per == 1 else f"{per}n"
        return label + (f"+{constant}" if constant else "")

    def evaluations_for(self, n: int) -> int | None:
        """The function evaluations of one gradient with ``n`` differentiated scalars."""
        return None if self.evaluations is None else self.evaluations[0] * n + self.evaluations[1]


_FD = dict(family=FD_FAMILY, mode=None)
_JAX = dict(family="jax", mode="reverse", accuracy="exact", tolerance=1e-10, extra="jax",
            namespace="jax", devices=("cpu", "gpu"))

#: name -> description, in the order methods are listed (tables, legends, ``names()``)
METHODS = {m.name: m for m in (
    MethodInfo("engine", "engine:EngineBackend", family="engine", mode="reverse",
               accuracy="exact", tolerance=1e-10, colour="#0072B2", marker="o",
               gradient="one reverse pass (autograd.grad)", namespace="engine"),
    MethodInfo("manual", "manual:ManualBackend", family="manual", mode="reverse",
               accuracy="exact", tolerance=1e-10, colour="#000000", marker="P",
               gradient="hand-written reverse pass", gradient_only="hand-written gradients only"),
    MethodInfo("sympy", "symbolic:SympyBackend", family="symbolic", mode=None,
               accuracy="exact", tolerance=1e-10, colour="#009E73", marker="^",
               gradient="symbolic closed form (sympy.diff per input, lambdified)",
               namespace="sympy", breakeven=("engine",)),
    MethodInfo("sympy-cse", "symbolic:SympyCseBackend", family="symbolic", mode=None,
               accuracy="exact", tolerance=1e-10, colour="#E69F00", marker="v",
               gradient="symbolic closed form (sympy.diff per input, CSE, lambdified)",
               namespace="sympy", breakeven=("engine",)),
    MethodInfo("sympy-reverse", "symbolic_reverse:SympyReverseBackend", family="symbolic",
               mode="reverse", accuracy="exact", tolerance=1e-10, colour="#117733", marker="8",
               gradient="symbolic reverse accumulation over the expression DAG, lambdified",
               namespace="sympy", breakeven=("engine",)),
    MethodInfo("symengine", "symengine_backend:SymengineBackend", family="symbolic", mode=None,
               accuracy="exact", tolerance=1e-10, colour="#999933", marker="H",
               gradient="symbolic closed form (SymEngine diff per input, Lambdify)",
               extra="symbolic", namespace="sympy", breakeven=("engine",)),
    MethodInfo("fd-forward", "finite_diff:ForwardDifference", **_FD, accuracy="forward",
               tolerance=1e-4, colour="#E31A1C", marker="x", evaluations=(1, 1),
               gradient="forward differences of f, n + 1 evaluations"),
    MethodInfo("fd-central", "finite_diff:CentralDifference", **_FD, accuracy="central",
               tolerance=1e-6, colour="#66A61E", marker="+", evaluations=(2, 0),
               gradient="central differences of f, 2n evaluations"),
    MethodInfo("fd-complex-step", "finite_diff:ComplexStep", **_FD, accuracy="complex-step",
               tolerance=1e-13, colour="#8C2D04", marker="D", evaluations=(1, 0),
               gradient="complex step Im f(x + ih e_j) / h, n evaluations"),
    MethodInfo("fd-richardson", "finite_diff:Richardson", **_FD, accuracy="richardson",
               tolerance=1e-9, colour="#5E3C99", marker="*", evaluations=(6, 0),
               gradient="Richardson-extrapolated central differences of f, 6n evaluations",
               gradient_only="Richardson extrapolation is implemented for the gradient only"),
    MethodInfo("jax-jit", "jax_backend:JaxJitBackend", **_JAX, colour="#CC79A7", marker="s",
               gradient="jax.grad / jax.vjp under jit", breakeven=("jax-eager", "engine")),
    MethodInfo("jax-eager", "jax_backend:JaxEagerBackend", **_JAX, colour="#882255",
               marker="d", gradient="jax.grad / jax.vjp, eager"),
    MethodInfo("jax-jit-tf32", "jax_backend:JaxJitTf32Backend",
               **dict(_JAX, accuracy=REDUCED_PRECISION, tolerance=1e-2), colour="#FF00FF",
               marker="4", gradient="jax.grad / jax.vjp under jit, TF32 matmuls (GPU)"),
    MethodInfo("jax-jit-cpu", "jax_backend:JaxJitCpuBackend",
               **dict(_JAX, devices=("cpu",)), colour="#1100FF", marker="3",
               gradient="jax.grad / jax.vjp under jit, on the CPU"),
    MethodInfo("torch", "torch_backend:TorchBackend", family="torch", mode="reverse",
               accuracy="exact", tolerance=1e-10, colour="#D55E00", marker="h",
               gradient="one reverse pass (torch.autograd.grad)", extra="torch",
               namespace="torch"),
    MethodInfo("engine-compiled", "engine_compiled:EngineCompiledBackend", family="engine",
               mode="reverse", accuracy="exact", tolerance=1e-12, colour="#1B2A6B", marker="p",
               gradient="one pass of the compiled reverse program", namespace="engine",
               breakeven=("engine",)),
    MethodInfo("autograd", "autograd_backend:AutogradBackend", family="autograd",
               mode="reverse", accuracy="exact", tolerance=1e-10, colour="#44AA99", marker="X",
               gradient="one reverse pass (autograd.make_vjp)", extra="autograd",
               namespace="autograd"),
    MethodInfo("numdifftools", "numdifftools_backend:NumdifftoolsBackend", **_FD,
               accuracy=None, tolerance=1e-9, colour="#6B6B6B", marker="1",
               gradient="numdifftools.Gradient (adaptive central differences, Richardson)",
               extra="numdifftools"),
    MethodInfo("jax-jacfwd", "forward:JaxJacfwdBackend", **dict(_JAX, mode="forward"),
               colour="#AA4499", marker="<",
               gradient="n forward passes (jax.jacfwd under jit), contracted"),
    MethodInfo("engine-jvp", "forward:EngineJvpBackend", family="engine", mode="forward",
               accuracy="exact", tolerance=1e-10, colour="#56B4E9", marker=">",
               gradient="n forward products (functional.jvp), contracted", namespace="engine"),
)}


def info(name: str) -> MethodInfo:
    """The description of method ``name``; a ``KeyError`` listing the known names if none."""
    try:
        return METHODS[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; known backends: {', '.join(METHODS)}") from None


def exact_families() -> tuple:
    """The families whose every full-precision method is exact up to rounding: what a
    results row's ``family`` says of a method a folder does not describe (a reduced-precision
    variant such as ``jax-jit-tf32`` is described by its own ``exact``)."""
    full = [m for m in METHODS.values() if m.accuracy != REDUCED_PRECISION]
    return tuple(f for f in FAMILIES
                 if all(m.exact for m in full if m.family == f)
                 and any(m.family == f for m in full))
