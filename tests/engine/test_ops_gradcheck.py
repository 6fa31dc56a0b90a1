"""First- and second-order finite-difference checks of every op of the engine.

Every case is a function of float64 Tensors plus the arrays it is evaluated at.
``gradcheck`` compares the engine's Jacobian with central differences;
``gradgradcheck`` does the same for the recorded gradient (``create_graph``),
i.e. it checks the backward formulas are themselves correctly differentiable.

Ops are reached both through Tensor methods / operators and through the
functions of ``diffcompare.engine``.  Inputs are kept away from kinks (relu,
abs, max/min ties, maximum/minimum ties) and singularities (log, sqrt, div,
pow with a tensor exponent), so finite differences are valid.
"""
import numpy as np
import pytest

import diffcompare.engine as E
from diffcompare.engine import Function, Tensor, functional
from diffcompare.engine.gradcheck import (GradcheckError, gradcheck, gradgradcheck,
                                          numerical_jacobian)


# --------------------------------------------------------------------------- inputs


def _rng(*key):
    """A generator seeded from 0 and a case key, so every case has its own fixed draw."""
    return np.random.default_rng([0, *key])


def normal(shape, key=0):
    return _rng(1, key).standard_normal(shape)


def positive(shape, key=0, low=0.5, high=2.0):
    return _rng(2, key).uniform(low, high, shape)


def away_from_zero(shape, key=0, gap=0.2):
    """Values with |x| in [gap, 1 + gap] and random sign (no kink at 0 for relu/abs)."""
    g = _rng(3, key)
    return g.choice([-1.0, 1.0], size=shape) * (gap + g.uniform(0, 1, shape))


def distinct(shape, key=0):
    """Values that differ pairwise by >= 0.1 (no ties for max/min, far beyond eps)."""
    n = int(np.prod(shape, dtype=int))
    g = _rng(4, key)
    return (g.permutation(n) * 0.1 - n * 0.05 + g.uniform(0, 0.01, n)).reshape(shape)


def no_ties(a_shape, b_shape, key=0):
    """Two arrays whose broadcast elementwise differences are all >= 0.05 in size."""
    for k in range(100):
        a, b = normal(a_shape, 1000 * key + 2 * k), normal(b_shape, 1000 * key + 2 * k + 1)
        if np.abs(a - b).min() > 0.05:
            return a, b
    raise AssertionError("could not draw tie-free inputs")  # pragma: no cover


# --------------------------------------------------------------------------- cases

CASES = []


def case(id, fn, *inputs):
    CASES.append(pytest.param(fn, [np.asarray(x, dtype=np.float64) for x in inputs], id=id))


BROADCAST_PAIRS = [((), ()), ((4,), (4,)), ((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((5,), ())]


def _shape_id(shape):
    return "x".join(map(str, shape)) or "0d"


# --- elementwise binary (with broadcasting) ---------------------------------------

for sa, sb in BROADCAST_PAIRS:
    sid = f"{_shape_id(sa)}-{_shape_id(sb)}"
    case(f"add-op-{sid}", lambda a, b: a + b, normal(sa, 1), normal(sb, 2))
    case(f"add-fn-{sid}", lambda a, b: E.add(a, b), normal(sa, 3), normal(sb, 4))
    case(f"sub-op-{sid}", lambda a, b: a - b, normal(sa, 5), normal(sb, 6))
    case(f"sub-fn-{sid}", lambda a, b: E.sub(b, a), normal(sa, 7), normal(sb, 8))
    case(f"mul-op-{sid}", lambda a, b: a * b, normal(sa, 9), normal(sb, 10))
    case(f"mul-fn-{sid}", lambda a, b: E.mul(a, b), normal(sa, 11), normal(sb, 12))
    case(f"div-op-{sid}", lambda a, b: a / b, normal(sa, 13), away_from_zero(sb, 14, gap=0.5))
    case(f"div-fn-{sid}", lambda a, b: E.div(b, a), away_from_zero(sa, 15, gap=0.5), normal(sb, 16))
    case(f"pow-op-tensor-exp-{sid}", lambda a, b: a ** b, positive(sa, 17), normal(sb, 18))
    case(f"pow-fn-tensor-exp-{sid}", lambda a, b: E.pow(b, a), normal(sa, 19), positive(sb, 20))
    case(f"maximum-{sid}", lambda a, b: E.maximum(a, b), *no_ties(sa, sb, 21))
    case(f"minimum-{sid}", lambda a, b: E.minimum(a, b), *no_ties(sa, sb, 22))

# with Python numbers and constant arrays on either side
case("radd-number", lambda a: 2.5 + a, normal((3,), 30))
case("rsub-number", lambda a: 2.5 - a, normal((3,), 31))
case("rmul-number", lambda a: -1.5 * a, normal((3,), 32))
case("rdiv-number", lambda a: 1.0 / a, away_from_zero((3,), 33, gap=0.5))
case("mul-const-array", lambda a: a * np.arange(1.0, 4.0), normal((2, 3), 34))
case("neg-op", lambda a: -a, normal((2, 3), 35))
case("neg-fn", lambda a: E.neg(a), normal((), 36))
case("pos-op", lambda a: +a * a, normal((3,), 37))

# pow with a constant exponent (tensor base only) and a constant base (tensor exponent)
case("pow-int-exp", lambda a: a ** 3, normal((2, 3), 40))
case("pow-square", lambda a: a ** 2, normal((), 41))
case("pow-frac-exp", lambda a: a ** 2.5, positive((4,), 42))
case("pow-neg-exp", lambda a: a ** -1.5, positive((4,), 43))
case("pow-method", lambda a: a.pow(3.0), normal((3,), 44))
case("rpow-number", lambda a: 2.0 ** a, normal((4,), 45))
case("pow-fn-const-base", lambda a: E.pow(np.full(3, 1.7), a), normal((3,), 46))
case("pow-same-tensor", lambda a: a ** a, positive((3,), 47))

# --- elementwise unary --------------------------------------------------------------

UNARY = {
    "exp": (lambda a: a.exp(), E.exp, normal),
    "log": (lambda a: a.log(), E.log, positive),
    "sqrt": (lambda a: a.sqrt(), E.sqrt, positive),
    "sin": (lambda a: a.sin(), E.sin, normal),
    "cos": (lambda a: a.cos(), E.cos, normal),
    "tanh": (lambda a: a.tanh(), E.tanh, normal),
    "sigmoid": (lambda a: a.sigmoid(), E.sigmoid, normal),
    "relu": (lambda a: a.relu(), E.relu, away_from_zero),
    "abs": (lambda a: a.abs(), E.abs, away_from_zero),
}
for name, (method, fn, draw) in UNARY.items():
    for shape in [(), (5,), (2, 3)]:
        sid = _shape_id(shape)
        case(f"{name}-method-{sid}", method, draw(shape, 50))
        case(f"{name}-fn-{sid}", fn, draw(shape, 51))
case("abs-builtin", lambda a: abs(a) * a, away_from_zero((4,), 52))
case("sigmoid-large-inputs", E.sigmoid, np.array([-30.0, -8.0, 0.3, 8.0, 30.0]))
case("exp-of-sum-chain", lambda a: (a.sin() * a.cos()).exp().tanh(), normal((4,), 53))

# --- where --------------------------------------------------------------------------

COND = np.array([[True, False, True, True], [False, False, True, False], [True, True, False, True]])
case("where-same-shape", lambda a, b: E.where(COND, a, b), normal((3, 4), 60), normal((3, 4), 61))
case("where-broadcast", lambda a, b: E.where(COND[:, :1], a, b), normal((3, 4), 62), normal((4,), 63))
case("where-number-branch", lambda a: E.where(COND, a * a, 0.0), normal((3, 4), 64))
case("where-tensor-cond", lambda a, b: E.where(Tensor(COND), b, a * b), normal((3, 4), 65),
     normal((1, 4), 66))

# --- matmul -------------------------------------------------------------------------

MATMUL_SHAPES = [
    ("1d@1d", (3,), (3,)),
    ("1d@2d", (3,), (3, 4)),
    ("2d@1d", (2, 3), (3,)),
    ("2d@2d", (2, 3), (3, 4)),
    ("3d@2d", (2, 2, 3), (3, 4)),
    ("3d@3d", (2, 2, 3), (2, 3, 2)),
    ("3d@3d-batch-broadcast", (1, 2, 3), (3, 3, 2)),
    ("4d@3d-batch-broadcast", (2, 1, 2, 3), (3, 3, 2)),
    ("1d@3d", (3,), (2, 3, 2)),
    ("3d@1d", (2, 2, 3), (3,)),
]
for mid, sa, sb in MATMUL_SHAPES:
    case(f"matmul-op-{mid}", lambda a, b: a @ b, normal(sa, 70), normal(sb, 71))
    case(f"matmul-fn-{mid}", lambda a, b: E.matmul(a, b), normal(sa, 72), normal(sb, 73))
case("matmul-method", lambda a, b: a.matmul(b).tanh(), normal((2, 3), 74), normal((3, 2), 75))
case("matmul-const-right", lambda a: a @ np.arange(6.0).reshape(3, 2), normal((2, 3), 76))
case("matmul-const-left", lambda b: np.arange(6.0).reshape(2, 3) @ b, normal((3, 2), 77))
case("matmul-self-gram", lambda a: a @ a.T, normal((2, 3), 78))

# --- reductions ---------------------------------------------------------------------

AXES = [None, 0, 1, 2, -1, -3, (0, 2), (-1, -2), (0, 1, 2)]


def _axis_id(axis):
    return "all" if axis is None else str(axis).replace(" ", "")


REDUCTIONS = {
    "sum": (lambda x, axis, keep: x.sum(axis=axis, keepdims=keep), E.sum, normal),
    "mean": (lambda x, axis, keep: x.mean(axis, keep), E.mean, normal),
    "max": (lambda x, axis, keep: x.max(axis=axis, keepdims=keep), E.max, distinct),
    "min": (lambda x, axis, keep: x.min(axis, keep), E.min, distinct),
    "logsumexp": (lambda x, axis, keep: x.logsumexp(axis, keep), E.logsumexp, normal),
}
for name, (method, fn, draw) in REDUCTIONS.items():
    for k, axis in enumerate(AXES):
        for keep in (False, True):
            rid = f"{name}-axis{_axis_id(axis)}-keep{keep}"
            # alternate the method and the function spelling
            if k % 2:
                f = (lambda fn, axis, keep: lambda x: fn(x, axis=axis, keepdims=keep))(fn, axis, keep)
                case(rid + "-fn", f, draw((2, 3, 4), 80 + k))
            else:
                f = (lambda m, axis, keep: lambda x: m(x, axis, keep))(method, axis, keep)
                case(rid + "-method", f, draw((2, 3, 4), 80 + k))
    case(f"{name}-0d", lambda x, fn=fn: fn(x), draw((), 99))
    case(f"{name}-1d-axis0", lambda x, fn=fn: fn(x, axis=0), draw((5,), 98))
case("sum-torch-spelling", lambda x: x.sum(dim=1, keepdim=True), normal((2, 3), 100))
case("mean-torch-spelling", lambda x: x.mean(dim=-1), normal((2, 3), 101))
case("max-torch-spelling", lambda x: x.max(dim=0, keepdim=True), distinct((3, 2), 102))
case("sum-of-squares", lambda x: (x * x).sum(axis=0), normal((3, 2), 103))
case("logsumexp-large-values", lambda x: E.logsumexp(x, axis=-1), normal((2, 3), 104) * 50 + 300)

# --- softmax / log_softmax ----------------------------------------------------------

for axis in (-1, 0, 1):
    case(f"softmax-fn-axis{axis}", lambda x, axis=axis: E.softmax(x, axis=axis), normal((2, 3, 4), 110))
    case(f"log_softmax-fn-axis{axis}", lambda x, axis=axis: E.log_softmax(x, axis=axis),
         normal((2, 3, 4), 111))
case("softmax-method-default", lambda x: x.softmax(), normal((3, 4), 112))
case("softmax-method-axis0", lambda x: x.softmax(0), normal((3, 4), 113))
case("log_softmax-method-default", lambda x: x.log_softmax(), normal((3, 4), 114))
case("log_softmax-method-axis0", lambda x: x.log_softmax(0), normal((3, 4), 115))
case("softmax-1d", E.softmax, normal((5,), 116))
case("log_softmax-1d", E.log_softmax, normal((5,), 117))
case("softmax-weighted", lambda x: (E.softmax(x) * np.arange(4.0)).sum(-1), normal((2, 4), 118))
case("log_softmax-shifted-large", lambda x: E.log_softmax(x, axis=-1), normal((2, 3), 119) + 500)

# --- shape ops ------------------------------------------------------------------------

X234 = normal((2, 3, 4), 120)
case("reshape-method-args", lambda x: x.reshape(6, 4), X234)
case("reshape-method-tuple", lambda x: x.reshape((4, -1)) * 2, X234)
case("reshape-fn-flat", lambda x: E.reshape(x, (-1,)), X234)
case("reshape-fn-int", lambda x: E.reshape(x, 24), X234)
case("view", lambda x: x.view(3, 8).sin(), X234)
case("flatten", lambda x: x.flatten() ** 2, X234)
case("reshape-0d-to-2d", lambda x: x.reshape(1, 1) * x, normal((), 121))
case("reshape-to-0d", lambda x: E.reshape(x, ()), normal((1, 1), 122))
case("T-2d", lambda x: x.T, normal((2, 3), 123))
case("T-3d", lambda x: x.T * np.arange(2.0), X234)
case("t-method", lambda x: x.t() @ x, normal((3, 2), 124))
case("mT", lambda x: x.mT, X234)
case("transpose-fn-default", lambda x: E.transpose(x), X234)
case("transpose-fn-axes", lambda x: E.transpose(x, (1, 0, 2)), X234)
case("transpose-method-pair", lambda x: x.transpose(0, 2), X234)
case("transpose-method-none", lambda x: x.transpose(), X234)
case("permute-fn", lambda x: E.permute(x, (2, 0, 1)), X234)
case("permute-fn-negative", lambda x: E.permute(x, (-1, 0, -2)), X234)
case("permute-method-args", lambda x: x.permute(2, 0, 1) * x.permute(2, 0, 1), X234)
case("permute-method-tuple", lambda x: x.permute((1, 2, 0)), X234)
case("swapaxes-fn", lambda x: E.swapaxes(x, 0, 2), X234)
case("swapaxes-method-negative", lambda x: x.swapaxes(-1, 0), X234)
case("expand_dims-fn-0", lambda x: E.expand_dims(x, 0), normal((3, 2), 125))
case("expand_dims-fn-neg", lambda x: E.expand_dims(x, -1) * x[:, None], normal((3, 2), 126))
case("unsqueeze", lambda x: x.unsqueeze(1), normal((3, 2), 127))
case("expand_dims-0d", lambda x: E.expand_dims(x, 0), normal((), 128))
case("squeeze-fn-all", lambda x: E.squeeze(x), normal((1, 3, 1), 129))
case("squeeze-fn-axis", lambda x: E.squeeze(x, 0), normal((1, 3, 1), 130))
case("squeeze-method-neg", lambda x: x.squeeze(-1), normal((1, 3, 1), 131))
case("squeeze-to-0d", lambda x: x.squeeze() * 3, normal((1, 1), 132))
case("broadcast_to-fn", lambda x: E.broadcast_to(x, (2, 3, 4)), normal((3, 1), 133))
case("broadcast_to-method", lambda x: x.broadcast_to((2, 3)) ** 2, normal((3,), 134))
case("broadcast_to-0d", lambda x: E.broadcast_to(x, (2, 2)) * np.arange(4.0).reshape(2, 2),
     normal((), 135))

# --- indexing -------------------------------------------------------------------------

X45 = normal((4, 5), 140)
MASK45 = _rng(141).uniform(size=(4, 5)) > 0.5
INDEXING = {
    "int": lambda x: x[1],
    "negative-int": lambda x: x[-1],
    "int-int-0d": lambda x: x[1, 2],
    "slice": lambda x: x[1:3],
    "slice-2d": lambda x: x[1:, :-2],
    "negative-step": lambda x: x[::-1],
    "negative-step-2d": lambda x: x[3:0:-2, ::-3],
    "none": lambda x: x[:, None],
    "ellipsis": lambda x: x[..., 2],
    "none-ellipsis-int": lambda x: x[None, ..., 1],
    "int-negative-step": lambda x: x[1, ::-2],
    "int-array-repeated": lambda x: x[np.array([0, 2, 2, 1, 0])],
    "list-repeated": lambda x: x[[3, 3, 0]],
    "int-array-pairs-repeated": lambda x: x[np.array([0, 2, 0, 0]), np.array([1, 1, 1, 4])],
    "slice-then-int-array": lambda x: x[:, [1, 1, 0, 4]],
    "int-array-2d-key": lambda x: x[np.array([[0, 1], [1, 1]])],
    "tensor-int-key": lambda x: x[Tensor(np.array([2, 2, 3]), dtype=np.int64)],
    "bool-mask": lambda x: x[MASK45],
    "bool-mask-rows": lambda x: x[np.array([True, False, True, True])],
    "bool-mask-tensor": lambda x: x[Tensor(MASK45)],
    "chained": lambda x: x[::-1][[0, 0, 2]][:, 1:4],
    "repeated-use": lambda x: x[0] * x[1] + x[[0, 0]].sum(0),
}
for iid, fn in INDEXING.items():
    case(f"index-{iid}", fn, X45)
case("index-3d-mixed", lambda x: x[1, :, [0, 0, 2]], X234)
case("index-mask-from-values", lambda x: x[x > 0] * 2, X45)  # X45 has no element within eps of 0

# --- item assignment on a clone ----------------------------------------------------------


def _assign(key, value_fn, use=lambda y: y):
    def f(x, v):
        y = x.clone()
        y[key] = value_fn(v)
        return use(y)
    return f


case("setitem-slice", _assign(slice(1, 3), lambda v: v * 2), normal((4, 3), 150), normal((2, 3), 151))
case("setitem-slice-broadcast", _assign(slice(1, 3), lambda v: v * 2), normal((4, 3), 152),
     normal((3,), 153))
case("setitem-int", _assign(0, lambda v: v.sin(), lambda y: (y * y).sum()), normal((4, 3), 154),
     normal((3,), 155))
case("setitem-int-array", _assign(np.array([0, 2]), lambda v: v * v), normal((4, 3), 156),
     normal((2, 3), 157))
case("setitem-bool-mask", _assign(MASK45, lambda v: v + 1, lambda y: y * y), normal((4, 5), 158),
     normal((int(MASK45.sum()),), 159))
case("setitem-element-0d", _assign((1, 2), lambda v: v * 3), normal((4, 3), 160), normal((), 161))
case("setitem-negative-step", _assign((slice(None, None, -2), 1), lambda v: v.exp()),
     normal((4, 3), 162), normal((2,), 163))
case("setitem-clone-method", lambda x: (lambda y: (y.__setitem__(1, 0.0), y * x)[1])(x.clone()),
     normal((3, 2), 164))

# --- unbind / split / stack / concatenate ------------------------------------------------

case("unbind-method-all", lambda x: (lambda a, b, c: a * b + c)(*x.unbind(0)), normal((3, 4), 170))
case("unbind-fn-dim1-some", lambda x: (lambda p: p[0] * p[2])(E.unbind(x, dim=1)), normal((2, 3), 171))
case("unbind-fn-last-only", lambda x: E.unbind(x, 0)[-1] ** 2, normal((3, 2), 172))
case("iterate-rows", lambda x: E.stack([row.sin() for row in x]), normal((3, 2), 173))
case("split-equal", lambda x: (lambda a, b, c: a * c + b)(*x.split(2)), normal((6, 2), 174))
case("split-unequal-list", lambda x: (lambda a, b, c: a.sum(0) + b.sum(0) * c.sum(0))(
    *E.split(x, [1, 3, 2])), normal((6, 2), 175))
case("split-remainder", lambda x: (lambda a, b: a.sum() * b.sum())(*E.split(x, 4)), normal((6,), 176))
case("split-dim1-some-outputs", lambda x: E.split(x, [2, 1, 1], dim=1)[2] ** 2, normal((3, 4), 177))
case("split-first-only", lambda x: x.split(1)[0] * 2, normal((3, 2), 178))
case("stack-axis0", lambda a, b: E.stack([a, b, a * b]), normal((3,), 180), normal((3,), 181))
case("stack-axis1", lambda a, b: E.stack([a, b], axis=1), normal((2, 3), 182), normal((2, 3), 183))
case("stack-axis-neg", lambda a, b: E.stack([a, b.tanh()], axis=-1), normal((2, 3), 184),
     normal((2, 3), 185))
case("stack-with-const", lambda a: E.stack([a, np.ones(3), a * a]), normal((3,), 186))
case("stack-0d", lambda a, b: E.stack([a, b, a * b]), normal((), 187), normal((), 188))
case("concatenate-axis0", lambda a, b: E.concatenate([a, b]), normal((2, 3), 190), normal((1, 3), 191))
case("concatenate-axis1", lambda a, b: E.concatenate([a, b, a], axis=1), normal((2, 3), 192),
     normal((2, 1), 193))
case("concatenate-axis-neg", lambda a, b: E.concatenate([b, a * b], axis=-1), normal((2, 2), 194),
     normal((2, 2), 195))
case("concatenate-with-const", lambda a: E.concatenate([np.zeros(2), a.exp()]), normal((3,), 196))

# --- losses -------------------------------------------------------------------------------

for reduction in ("mean", "sum", "none"):
    case(f"mse_loss-{reduction}", lambda a, b, r=reduction: E.mse_loss(a, b, reduction=r),
         normal((3, 4), 200), normal((3, 4), 201))
    case(f"mse_loss-broadcast-target-{reduction}",
         lambda a, b, r=reduction: E.mse_loss(a, b, reduction=r), normal((3, 4), 202), normal((4,), 203))
    case(f"mse_loss-const-target-{reduction}",
         lambda a, r=reduction: E.mse_loss(a.tanh(), np.arange(3.0), r), normal((3,), 204))

TARGET = np.array([0, 2, 2, 1])
for reduction in ("mean", "sum", "none"):
    case(f"nll_loss-{reduction}", lambda x, r=reduction: E.nll_loss(E.log_softmax(x), TARGET, r),
         normal((4, 3), 210))
    case(f"nll_loss-raw-{reduction}", lambda x, r=reduction: E.nll_loss(x * x, TARGET, r),
         normal((4, 3), 211))
    case(f"cross_entropy-int-{reduction}",
         lambda x, r=reduction: E.cross_entropy(x, TARGET, reduction=r), normal((4, 3), 212))
    case(f"cross_entropy-prob-{reduction}",
         lambda x, p, r=reduction: E.cross_entropy(x, p, reduction=r), normal((4, 3), 213),
         positive((4, 3), 214) / positive((4, 3), 214).sum(-1, keepdims=True))
    case(f"cross_entropy-prob-const-{reduction}",
         lambda x, r=reduction: E.cross_entropy(x, E.softmax(Tensor(normal((4, 3), 215))), r),
         normal((4, 3), 216))
case("nll_loss-1d-0d-target", lambda x: E.nll_loss(E.log_softmax(x), np.array(1)), normal((3,), 217))
case("nll_loss-tensor-target", lambda x: E.nll_loss(x, Tensor(TARGET, dtype=np.int64)), normal((4, 3), 218))
case("cross_entropy-1d", lambda x: E.cross_entropy(x, np.array(2)), normal((3,), 219))
case("cross_entropy-of-mlp", lambda x, w: E.cross_entropy((x @ w).tanh() * 3, TARGET),
     normal((4, 2), 220), normal((2, 3), 221))


IDS_SEEN = [p.id for p in CASES]
assert len(IDS_SEEN) == len(set(IDS_SEEN)), "duplicate case ids"


@pytest.mark.parametrize("fn, inputs", CASES)
def test_gradcheck(fn, inputs):
    assert gradcheck(fn, inputs) is True


@pytest.mark.parametrize("fn, inputs", CASES)
def test_gradgradcheck(fn, inputs):
    assert gradgradcheck(fn, inputs) is True


@pytest.mark.parametrize("fn, inputs", CASES)
def test_jvp_and_vjp_agree_with_the_jacobian(fn, inputs):
    """jvp differentiates each backward with respect to its incoming gradient (a path
    gradgradcheck, with its fixed grad_outputs, does not take); both must match J."""
    jacs = functional.jacobian(fn, tuple(inputs), allow_unused=True)
    g = np.random.default_rng(1)
    out_shape = fn(*(Tensor(x) for x in inputs)).shape
    vs = [g.standard_normal(x.shape) for x in inputs]
    u = g.standard_normal(out_shape)
    n_out = int(np.prod(out_shape, dtype=int))
    flat = [j.reshape(n_out, x.size) for j, x in zip(jacs, inputs)]
    expected_jv = sum(j @ v.ravel() for j, v in zip(flat, vs)).reshape(out_shape)
    if len(inputs) == 1:
        _, jv = functional.jvp(fn, inputs[0], vs[0], allow_unused=True)
    else:
        _, jv = functional.jvp(fn, tuple(inputs), tuple(vs), allow_unused=True)
    np.testing.assert_allclose(jv, expected_jv, rtol=1e-10, atol=1e-12)
    _, vjs = functional.vjp(fn, tuple(inputs), u, allow_unused=True)
    for vj, j, x in zip(vjs, flat, inputs):
        np.testing.assert_allclose(vj, (u.ravel() @ j).reshape(x.shape), rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- forward values
# gradcheck only proves the backward matches the forward; these pin the forward itself.

XV = normal((2, 3, 4), 300)
FORWARD = [
    ("sigmoid", lambda x: E.sigmoid(x), lambda a: 1 / (1 + np.exp(-a))),
    ("relu", lambda x: E.relu(x), lambda a: np.maximum(a, 0)),
    ("softmax-1", lambda x: E.softmax(x, 1), lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
    ("log_softmax-0", lambda x: E.log_softmax(x, 0),
     lambda a: a - np.log(np.exp(a).sum(0, keepdims=True))),
    ("logsumexp-tuple", lambda x: E.logsumexp(x, (0, 2)), lambda a: np.log(np.exp(a).sum((0, 2)))),
    ("logsumexp-keep", lambda x: E.logsumexp(x, -1, True), lambda a: np.log(np.exp(a).sum(-1, keepdims=True))),
    ("max-tuple", lambda x: E.max(x, (0, -1)), lambda a: a.max((0, 2))),
    ("min-keep", lambda x: x.min(1, True), lambda a: a.min(1, keepdims=True)),
    ("mean-neg", lambda x: x.mean(-2), lambda a: a.mean(-2)),
    ("index-mixed", lambda x: x[1, ::-1, [0, 0, 3]], lambda a: a[1, ::-1, [0, 0, 3]]),
    ("index-none-ellipsis", lambda x: x[None, ..., 1], lambda a: a[None, ..., 1]),
    ("transpose-pair", lambda x: x.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("T", lambda x: x.T, lambda a: a.T),
    ("matmul-batch", lambda x: x @ x.mT, lambda a: a @ a.swapaxes(-1, -2)),
    ("split-unequal", lambda x: E.concatenate(E.split(x, [1, 3], dim=-1)[::-1], axis=-1),
     lambda a: np.concatenate([a[..., 1:], a[..., :1]], -1)),
    ("unbind-1", lambda x: E.stack(E.unbind(x, 1)[::-1], axis=1), lambda a: a[:, ::-1]),
    ("mse-mean", lambda x: E.mse_loss(x, x * 0.5), lambda a: np.mean((0.5 * a) ** 2)),
    ("mse-none", lambda x: E.mse_loss(x, 1.0, reduction="none"), lambda a: (a - 1) ** 2),
    ("nll-mean", lambda x: E.nll_loss(x[0].T, np.array([0, 2, 1, 1])),
     lambda a: -np.mean(a[0].T[np.arange(4), [0, 2, 1, 1]])),
    ("cross_entropy-sum", lambda x: E.cross_entropy(x[1], np.array([3, 0, 1]), "sum"),
     lambda a: -np.sum((a[1] - np.log(np.exp(a[1]).sum(-1, keepdims=True)))[np.arange(3), [3, 0, 1]])),
    ("setitem", lambda x: _assign(np.s_[:, 1], lambda v: v * 2)(x, x[:, 0]),
     lambda a: np.concatenate([a[:, :1], 2 * a[:, :1], a[:, 2:]], 1)),
]


@pytest.mark.parametrize("fn, ref", [pytest.param(f, r, id=i) for i, f, r in FORWARD])
def test_forward_values_match_numpy(fn, ref):
    out = fn(Tensor(XV))
    expected = ref(XV.copy())
    assert out.shape == expected.shape
    np.testing.assert_allclose(out.data, expected, rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------------- the checker itself


class WrongSquare(Function):
    """x ** 2 with the gradient x instead of 2 x."""

    def forward(self, a):
        self.save_for_backward(self=a)
        return a.data ** 2

    def backward(self, g):
        (a,) = self.saved_tensors
        return g * a


class DetachedSquareGrad(Function):
    """x ** 2 with a correct first derivative 2 x computed from a detached value,
    so the recorded gradient is constant and the second derivative comes out 0 (not 2)."""

    def forward(self, a):
        self.save_for_backward(self=a)
        return a.data ** 2

    def backward(self, g):
        (a,) = self.saved_tensors
        return g * (2 * (a.data if isinstance(a, Tensor) else a))


def test_gradcheck_fails_for_a_wrong_backward():
    x = np.array([0.5, -1.0, 2.0])
    with pytest.raises(GradcheckError, match="Worst at index") as info:
        gradcheck(lambda t: WrongSquare.apply(t), [x])
    # The worst element is the largest |x|: analytical x = 2.0 vs numerical 2x = 4.0.
    assert "(2, 2)" in str(info.value)
    assert "input 0" in str(info.value)
    assert gradcheck(lambda t: WrongSquare.apply(t), [x], raise_exception=False) is False


def test_gradcheck_error_is_an_assertion_error():
    assert issubclass(GradcheckError, AssertionError)


def test_gradgradcheck_fails_for_a_non_differentiable_backward():
    x = np.array([0.5, -1.0, 2.0])
    # first order is right...
    assert gradcheck(lambda t: DetachedSquareGrad.apply(t), [x]) is True
    # ...second order is not
    with pytest.raises(GradcheckError, match="Worst at index"):
        gradgradcheck(lambda t: DetachedSquareGrad.apply(t).sum(), [x])
    assert gradgradcheck(lambda t: DetachedSquareGrad.apply(t).sum(), [x],
                         raise_exception=False) is False


def test_gradcheck_names_the_failing_input():
    x, y = np.array([1.0, 2.0]), np.array([0.5, 1.5])
    with pytest.raises(GradcheckError, match=r"input 1 \(shape \(2,\)\)"):
        gradcheck(lambda a, b: a * 3 + WrongSquare.apply(b), [x, y])


def test_numerical_jacobian_of_a_known_function():
    x = np.array([0.3, -1.2, 2.0])
    W = np.arange(6.0).reshape(2, 3)
    (jac,) = numerical_jacobian(lambda t: W @ t, [x])
    np.testing.assert_allclose(jac, W, rtol=1e-8)
    jx, jy = numerical_jacobian(lambda a, b: (a * b).sum(), [x, 2 * x])
    assert jx.shape == (3,) and jy.shape == (3,)
    np.testing.assert_allclose(jx, 2 * x, rtol=1e-7)
    np.testing.assert_allclose(jy, x, rtol=1e-7)
    (jac0,) = numerical_jacobian(lambda t: t.sin(), [np.array(0.7)])
    assert jac0.shape == ()
    np.testing.assert_allclose(jac0, np.cos(0.7), rtol=1e-8)


def test_gradcheck_takes_tensors_that_require_grad_as_torch_users_pass_them():
    """torch.autograd.gradcheck asks for inputs with requires_grad=True; the engine's
    gradcheck used to fail on them with "Can't call numpy() on Tensor that requires grad"."""
    x = Tensor(np.array([0.3, -1.2, 2.0]), requires_grad=True)
    w = Tensor(np.array([1.5, 0.5, -0.25]), requires_grad=True)
    assert gradcheck(lambda a, b: (a.tanh() * b).sum(), (x, w), atol=1e-8, rtol=1e-6)
    assert gradgradcheck(lambda a, b: (a.tanh() * b).sum(), (x, w), atol=1e-8, rtol=1e-6)
    assert x.grad is None and x.requires_grad       # the inputs are left as they were
