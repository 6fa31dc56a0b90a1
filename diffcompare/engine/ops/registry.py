"""The table of ops: each op's name written once, with the surfaces it appears on.

Every op function of ``ops`` is entered here when it is defined (an elementwise
op by its one line ``exp = _unary(Exp, methods="exp", xp="exp")``, a hand-written
one by ``@register(...)`` on its ``def``).  Everything else is generated from the
table, never written again:

- ``ops.__all__`` (and so the names of ``diffcompare.engine``): the table's keys;
- the Tensor's methods and operators (``methods.install``): the ``methods`` column;
- the array namespace ``array_api``: the ``xp`` column (NumPy's spellings).

>>> from diffcompare.engine.ops import OPS
>>> OPS["exp"].kind, OPS["exp"].node.__name__, OPS["exp"].methods, OPS["exp"].xp
('unary', 'Exp', ('exp',), ('exp',))
>>> OPS["sub"].methods, OPS["sub"].xp
(('__sub__', '__rsub__', '__isub__', 'sub_'), ('subtract',))
>>> OPS["max"].kind, OPS["max"].xp
('reduction', ('max', 'amax'))
"""
from __future__ import annotations

from typing import Callable, NamedTuple


class Op(NamedTuple):
    """One row of the table.

    ``function``: the op function (``ops.exp``).
    ``kind``: how its Tensor methods are made:
      ``"unary"`` / ``"binary"``: the function is made from the ``Function`` ``node``
      (the elementwise ops) and the methods apply ``node`` directly.  A binary op's
      ``__x__`` is the operator, ``__rx__`` its reflected form (the tensor first when
      ``node.commutes``, as PyTorch records ``3 * a``), ``__ix__`` and ``x_`` its
      in-place forms, any other name the operator's method (``t.matmul``);
      ``"reduction"``: the method is the function, also taking PyTorch's ``dim=`` /
      ``keepdim=``;  ``""``: the method is the function itself (the tensor first).
    ``node``: the ``Function`` of a unary or binary op, else None.
    ``methods``: the Tensor attributes the op gives.
    ``xp``: the op's names in the array namespace.
    """

    function: Callable
    kind: str
    node: type | None
    methods: tuple
    xp: tuple


#: name -> Op, in definition order
OPS: dict = {}


def register(function=None, *, kind="", node=None, methods="", xp=""):
    """Enter ``function`` under its ``__name__``; usable as ``@register(...)``.

    ``methods`` and ``xp`` are space-separated names.
    """
    def enter(fn):
        name = fn.__name__
        if name in OPS:
            raise ValueError(f"op {name!r} is registered twice; each op name has one row.")
        OPS[name] = Op(fn, kind, node, tuple(methods.split()), tuple(xp.split()))
        return fn

    return enter if function is None else enter(function)


def namespace() -> dict:
    """``{array-namespace name: op function}`` from the ``xp`` column."""
    return {alias: op.function for op in OPS.values() for alias in op.xp}
