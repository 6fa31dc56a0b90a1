"""Small seeded float64 problems for the dense operator tests, and their references:
torch.func on the same function (flattened as diffcompare.operators.layout documents,
written out again here so the reference does not share the code under test) and exact
closed forms where there is one."""
from __future__ import annotations

import numpy as np

from diffcompare.problems import Problem


def _rng(seed):
    return np.random.default_rng(seed)


# --- vector outputs: R^4 -> R^3, broadcasting and size-1 axes ---------------------------

def _vec_data(xp, x, A):
    # x (4,) differentiated; A (3, 4) data; output (1, 3): a leading size-1 axis
    return xp.tanh(A @ x)[None, :] * xp.exp(x[:3])[None, :] + x[3] ** 2


def _vec_broadcast(xp, a, b):
    # a (2, 1) and b (1, 2) differentiated (n = 4), broadcast to (2, 2); output (1, 3)
    return (xp.sin(a * b) + a ** 2 * b).reshape((1, 4))[:, :3]


VECTOR = [
    Problem("op_vec_data", _vec_data, lambda size, seed: (_rng(seed).standard_normal(4),
                                                           _rng(seed + 1).standard_normal((3, 4))),
            "tanh(A x) * exp(x[:3]) + x[3]^2 as (1, 3)", tags={"vector-output"},
            make_cotangent=lambda size, seed: _rng(seed + 2).standard_normal((1, 3))),
    Problem("op_vec_broadcast", _vec_broadcast,
            lambda size, seed: (_rng(seed).standard_normal((2, 1)),
                                _rng(seed + 1).standard_normal((1, 2))),
            "sin(a b) + a^2 b, broadcast (2,1)x(1,2), first 3 as (1, 3)", wrt=(0, 1),
            tags={"vector-output"},
            make_cotangent=lambda size, seed: _rng(seed + 2).standard_normal((1, 3))),
]


# --- scalar outputs ---------------------------------------------------------------------

def _quadratic(xp, x, A):
    return x @ (A @ x)


def _logistic(xp, w, X, y):
    z = X @ w
    return xp.mean(xp.log(1 + xp.exp(-y * z)))


def _two_args(xp, x, y):
    return xp.sum(xp.tanh(x) * y) + xp.sum(x ** 2 * y ** 2)


SCALAR = [
    Problem("op_quadratic", _quadratic,
            lambda size, seed: (_rng(seed).standard_normal(4), _rng(seed + 1).standard_normal((4, 4))),
            "x^T A x, A not symmetric"),
    Problem("op_logistic", _logistic,
            lambda size, seed: (_rng(seed).standard_normal(3) * 0.5,
                                _rng(seed + 1).standard_normal((6, 3)),
                                np.sign(_rng(seed + 2).standard_normal(6))),
            "logistic regression, mean loss over 6 samples"),
    Problem("op_two_args", _two_args,
            lambda size, seed: (_rng(seed).standard_normal(3), _rng(seed + 1).standard_normal(3)),
            "tanh(x) y + x^2 y^2, both differentiated", wrt=(0, 1)),
]


def quadratic_hessian(inputs):
    """d²(xᵀ A x) = A + Aᵀ."""
    A = inputs[1]
    return A + A.T


def logistic_hessian(inputs):
    """Xᵀ diag(s (1 - s)) X / N, s = sigmoid(y X w) (y² = 1)."""
    w, X, y = inputs
    s = 1 / (1 + np.exp(-y * (X @ w)))
    return X.T @ (X * (s * (1 - s))[:, None]) / len(y)


def logistic_gradient(inputs):
    w, X, y = inputs
    s = 1 / (1 + np.exp(-y * (X @ w)))
    return X.T @ (-y * (1 - s)) / len(y)


def vectors(problem, inputs, seed=7):
    """A seeded tangent ``(n,)`` and cotangent ``(m,)`` for ``problem`` at ``inputs``."""
    n = int(sum(np.size(inputs[i]) for i in problem.wrt))
    m = int(np.size(problem.fn(np, *inputs)))
    rng = _rng(seed)
    return rng.standard_normal(n), rng.standard_normal(m)


def torch_reference(operator, problem, inputs, v=None, u=None):
    """The operator by torch.func, float64, over the flattened concatenated wrt arguments."""
    import torch

    from diffcompare.problems import torch_namespace

    xp = torch_namespace.namespace()
    args = [torch.from_numpy(np.array(a)) for a in inputs]
    shapes = [np.shape(inputs[i]) for i in problem.wrt]
    sizes = [int(np.prod(s)) for s in shapes]

    def f(x):
        call, start = list(args), 0
        for i, s, k in zip(problem.wrt, shapes, sizes):
            call[i] = x[start:start + k].reshape(s)
            start += k
        return problem.fn(xp, *call).reshape(-1)

    x = torch.cat([args[i].reshape(-1) for i in problem.wrt])
    scalar = lambda x: f(x).reshape(())  # noqa: E731
    if operator == "gradient":
        out = torch.func.grad(scalar)(x)
    elif operator == "jacobian":
        out = torch.func.jacrev(f)(x)
    elif operator == "pullback":
        out = torch.func.vjp(f, x)[1](torch.from_numpy(u))[0]
    elif operator == "pushforward":
        out = torch.func.jvp(f, (x,), (torch.from_numpy(v),))[1]
    elif operator == "hessian":
        out = torch.func.hessian(scalar)(x)
    else:
        out = torch.func.jvp(torch.func.grad(scalar), (x,), (torch.from_numpy(v),))[1]
    return out.detach().numpy()
