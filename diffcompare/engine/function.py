"""Backward graph nodes: ``Node``, saved tensors, ``Function`` and ``AccumulateGrad``.

Every differentiable op is a ``Function`` subclass whose instance *is* the
backward node of the tensor it produced (``y.grad_fn``), as in PyTorch:

- ``forward(*inputs, **params)`` computes the result from the inputs' NumPy
  data and saves what ``backward`` needs with ``save_for_backward``;
- ``backward(*grads)`` maps the gradient of each output to a gradient for each
  input (``None`` where an input needs none).

``backward`` is written with operators and the helpers of ``ops.dual``, so the
same formula runs on plain arrays (an ordinary backward) and on Tensors (a
backward with ``create_graph=True``, which is itself recorded and can be
differentiated again).

>>> from diffcompare.engine import Tensor
>>> a = Tensor([2.0], requires_grad=True); b = Tensor([3.0], requires_grad=True)
>>> c = a * b
>>> c.grad_fn.name(), c.grad_fn.next_functions[0][0].name()
('MulBackward0', 'AccumulateGrad')
>>> sorted(c.grad_fn.saved)
['other', 'self']
"""
from __future__ import annotations

import itertools
import operator
import sys
import weakref

import numpy as np

from .grad_mode import state as _grad_state
from .tensor import Tensor

FREED_MESSAGE = (
    "Trying to backward through the graph a second time (or directly access saved "
    "tensors after they have already been freed). Saved intermediate values of the "
    "graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or "
    "if you need to access saved tensors after calling backward."
)


class Node:
    """A node of the backward graph (a tensor's ``grad_fn``).

    ``next_functions`` holds one ``(node, input_nr)`` pair per input of the op:
    the node that receives this input's gradient (the input's ``grad_fn``, or
    the ``AccumulateGrad`` of a leaf) and which of that node's outputs the
    input was; ``(None, 0)`` for inputs that need no gradient.
    """

    num_outputs = 1
    is_view = False
    next_functions: tuple = ()
    sequence_nr = -1   # creation order (see _next_sequence_nr); the backward runs latest first
    _hooked = None   # [(output_nr, weakref to tensor)] for retain_grad / hooks on outputs

    def name(self) -> str:
        return type(self).__name__

    def hook_tensor(self, t) -> None:
        """Let this node find tensor ``t`` when ``t``'s gradient arrives here (``t`` is one of
        its outputs, or the leaf of an ``AccumulateGrad``), to run ``t``'s hooks and
        ``retain_grad`` then; once per tensor."""
        if self._hooked is None:
            self._hooked = []
        if not any(ref() is t for _, ref in self._hooked):
            self._hooked.append((t.output_nr, weakref.ref(t)))

    def unhook_tensor(self, t) -> None:
        """Forget ``t`` (an in-place op made it the output of another node)."""
        if self._hooked:
            self._hooked = [(nr, ref) for nr, ref in self._hooked if ref() is not t]

    @property
    def saved(self) -> dict:
        """``{name: SavedTensor}`` of what this node keeps for backward (empty once released)."""
        return {}

    @property
    def released(self) -> bool:
        return False

    def release(self) -> None:
        """Drop saved tensors (done after a backward without ``retain_graph``)."""

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class SavedTensor:
    """A tensor saved for backward, with the version it had when saved (``node.saved``).

    A node keeps each saved tensor as a plain tuple ``(tensor, data, version,
    counter)`` (see ``Function.save_for_backward``); this is the readable view of
    one, for graph tools.  Unpacking checks the version: if the tensor was modified
    in place since, the gradient formula would use the wrong values, so backward
    fails with a message naming the node, the shape and both versions.
    """

    __slots__ = ("tensor", "data", "version", "_vc", "_node")

    def __init__(self, node, entry):
        self._node = node
        self.tensor, self.data, self.version, self._vc = entry

    @property
    def is_output(self) -> bool:
        """The node's own output (kept as data and version counter, not as a Tensor)."""
        return self.tensor is None

    @property
    def shape(self):
        return self.data.shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nbytes(self) -> int:
        return self.data.nbytes

    def unpack(self, as_tensor: bool):
        return _unpack(self._node, (self.tensor, self.data, self.version, self._vc), as_tensor)


def _saved_output(tensor) -> tuple:
    """The entry of a node's own output: not the Tensor (that would be a reference
    cycle output -> grad_fn -> output) but its array and version counter; it is
    rebuilt on unpack."""
    vc = tensor._vc_or_new()
    return (None, tensor.data, vc.value, vc)


def _unpack(node, entry, as_tensor: bool):
    """A saved entry's array (or Tensor, for create_graph), after checking its version."""
    tensor, data, version, vc = entry
    if tensor is not None:
        vc = tensor._vc
        current = 0 if vc is None else vc.value
        if current != version:
            raise _modified(node, data, current, version)
        return tensor if as_tensor else data
    if vc.value != version:
        raise _modified(node, data, vc.value, version)
    return Tensor._make(data, grad_fn=node, vc=vc) if as_tensor else data


def _modified(node, data, current, version) -> RuntimeError:
    return RuntimeError(
        "one of the variables needed for gradient computation has been modified "
        f"by an inplace operation: the {data.dtype} tensor of shape "
        f"{tuple(data.shape)} saved by {node.name()} is at version "
        f"{current}; expected version {version} instead. Hint: do not modify "
        "it in place before backward (write x = x + 1 instead of x += 1), or "
        "save a copy with x.clone() before using it."
    )


class Function(Node):
    """Base class of differentiable ops; an instance is the op's backward node.

    Subclass attributes:
      ``broadcasts``: (binary ops) gradients are summed back to each input's shape
        (NumPy broadcasting), in one place, after ``backward`` - ops don't do it themselves.
      ``saves_result``: the op's own output is saved (``exp``, ``tanh``...) and
        comes last in ``saved_tensors``.
      ``is_view``: the output shares memory with input 0 and so shares its
        version counter.
    """

    broadcasts = False
    saves_result = False
    is_view = False

    _saved = None          # dict name -> saved entry (see SavedTensor), or None
    _released = False
    _as_tensor = False     # set by the engine: unpack saved tensors as Tensors (create_graph)
    _input_shapes = None   # set for broadcasting ops whose inputs' shapes differ from the output
    needs_input_grad: tuple = ()

    def name(self) -> str:
        """PyTorch's naming: the op ``Mul`` has the backward node ``MulBackward0``."""
        return type(self).__name__ + "Backward0"

    # --- defined by subclasses -------------------------------------------------
    def forward(self, *inputs, **params):  # pragma: no cover - abstract
        raise NotImplementedError

    def backward(self, *grads):  # pragma: no cover - abstract
        raise NotImplementedError

    # --- saving ---------------------------------------------------------------
    def needs(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient (False when the op is not recorded)."""
        return bool(self.needs_input_grad) and self.needs_input_grad[i]

    def save_for_backward(self, /, **tensors):
        """Save input Tensors by name (``None`` values are skipped; nothing is
        saved when the op is not being recorded)."""
        if not self.needs_input_grad:
            return
        saved = self._saved
        if saved is None:
            saved = self._saved = {}
        for key, t in tensors.items():
            if t is not None:
                vc = t._vc   # an input's entry: the tensor, its array, its version now
                saved[key] = (t, t.data, 0 if vc is None else vc.value, None)

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors in save order: arrays, or Tensors during a create_graph backward."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        if self._saved is None:
            return ()
        as_tensor = self._as_tensor
        return tuple([_unpack(self, entry, as_tensor) for entry in self._saved.values()])

    def saved_value(self, name: str):
        """One saved tensor by name: an array, or a Tensor during a create_graph backward."""
        if self._released:
            raise RuntimeError(FREED_MESSAGE)
        entry = self._saved[name]
        if not self._as_tensor:   # _unpack's common case, inlined: an array, unmodified
            tensor, data, version, vc = entry
            if tensor is not None:
                vc = tensor._vc
            if (0 if vc is None else vc.value) == version:
                return data
        return _unpack(self, entry, self._as_tensor)

    @property
    def saved(self) -> dict:
        if not self._saved or self._released:
            return {}
        return {name: SavedTensor(self, entry) for name, entry in self._saved.items()}

    @property
    def released(self) -> bool:
        return self._released

    def release(self) -> None:
        if self._saved is not None:
            self._saved = None
            self._released = True

    # --- running ----------------------------------------------------------------
    @classmethod
    def apply(cls, *inputs, **params):
        """Run the op on Tensors ``inputs`` and record it if any input requires grad."""
        node = cls()
        n = len(inputs)
        # whether to record and what each input needs, then the forward, written out for
        # the one- and two-input ops of every hot path (no star-call: it packs a tuple again)
        if n == 2:
            a, b = inputs
            need_a, need_b = a._requires_grad, b._requires_grad
            recording = (need_a or need_b) and _grad_state.enabled
            if recording:
                node.needs_input_grad = (need_a, need_b)
            out = node.forward(a, b, **params) if params else node.forward(a, b)
        elif n == 1:
            a = inputs[0]
            recording = a._requires_grad and _grad_state.enabled
            if recording:
                node.needs_input_grad = _NEEDS_ONE
            out = node.forward(a, **params) if params else node.forward(a)
        else:
            needs = tuple(map(_requires_grad_of, inputs))
            recording = True in needs and _grad_state.enabled
            if recording:
                node.needs_input_grad = needs
            out = node.forward(*inputs, **params)
        make = make_output
        vc = inputs[0]._vc_or_new() if cls.is_view else None
        if not recording:
            if type(out) is tuple:
                return tuple([make(o, None, 0, vc) for o in out])
            return make(out, None, 0, vc)

        # the edges (gradient_edge), written out likewise: a non-leaf input's is its
        # (grad_fn, output_nr); a leaf's may create its AccumulateGrad, so before this
        # node's number
        if n == 2:
            fn = a.grad_fn
            edge_a = ((fn, a.output_nr) if fn is not None
                      else (accumulator_of(a), 0) if need_a else _NO_EDGE)
            fn = b.grad_fn
            node.next_functions = (edge_a, (fn, b.output_nr) if fn is not None
                                   else (accumulator_of(b), 0) if need_b else _NO_EDGE)
        elif n == 1:
            fn = a.grad_fn
            node.next_functions = ((fn, a.output_nr) if fn is not None else (accumulator_of(a), 0),)
        else:
            node.next_functions = tuple(map(gradient_edge, inputs))
        node.sequence_nr = _next_sequence_nr()
        if type(out) is tuple:
            node.num_outputs = len(out)
            return tuple([make(o, node, i, vc) for i, o in enumerate(out)])
        if cls.broadcasts:   # binary ops: remember the shapes if a gradient must be summed back
            a_shape, b_shape = inputs[0].data.shape, inputs[1].data.shape
            if a_shape != out.shape or b_shape != out.shape:
                node._input_shapes = (a_shape, b_shape)
        result = make(out, node, 0, vc)
        if cls.saves_result:
            if node._saved is None:
                node._saved = {}
            node._saved["result"] = _saved_output(result)
        return result


_NEEDS_ONE = (True,)   # needs_input_grad of a recorded one-input op


class AccumulateGrad(Node):
    """The node that adds incoming gradients into a leaf's ``.grad``.

    One per leaf that requires grad; shared by every op that uses that leaf,
    which is how a leaf used twice ends up with the sum of both gradients.
    The leaf holds it weakly, as PyTorch's does: it lives as long as a graph
    that uses it, and the next graph built after that gets a new one.
    """

    def __init__(self, variable):
        self.variable = variable
        self.sequence_nr = _next_sequence_nr()
        if variable._hooks is not None:
            # the leaf's hooks run here, as a non-leaf's run at its grad_fn: before the
            # gradient is accumulated or captured (Tensor.register_hook)
            self.hook_tensor(variable)

    def accumulate_from(self, grads: list, create_graph: bool):
        """Take the gradient out of the engine's buffer ``grads`` and add it into
        ``variable.grad`` (an array; a Tensor in create_graph mode, recorded).

        The first gradient becomes ``.grad`` without a copy when nothing else holds
        the array, as PyTorch's AccumulateGrad steals a tensor whose use count says so:
        taking it out of the list leaves this method the only holder, so the reference
        count tells.  Otherwise it is copied: it may be shared with another leaf
        (AddBackward hands one array to both inputs) or be a view of the caller's
        ``gradient``, and an in-place ``.grad.zero_()`` must not reach those.
        """
        grad = grads[0]
        grads[0] = None
        # its own statement, before any call passes `grad` on
        unshared = (type(grad) is np.ndarray and grad.base is None and grad.flags.writeable
                    and sys.getrefcount(grad) <= _UNSHARED_REFCOUNT)
        var = self.variable
        old = var._grad
        if create_graph:
            grad = grad if type(grad) is Tensor else Tensor._make(grad)
            var._grad = grad if old is None else old + grad
            return
        if type(grad) is Tensor:
            grad = grad.data
        if old is None:
            if not (unshared and grad.dtype == var.data.dtype):
                grad = np.array(grad, dtype=var.data.dtype)
            var._grad = Tensor._make(grad)
        elif old._requires_grad:
            var._grad = Tensor._make(old.data + grad)
        else:
            np.add(old.data, grad, out=old.data, casting="unsafe")

    def accumulate(self, grad, create_graph: bool):
        """Add ``grad`` into ``variable.grad`` as ``accumulate_from`` does; the caller
        holds ``grad``, so it is copied if it becomes ``.grad``."""
        self.accumulate_from([grad], create_graph)


def _probe_refcount() -> int:
    # The count sys.getrefcount reports for an array held by one local name only,
    # measured on this interpreter in the shape of accumulate_from.
    holder = [np.empty(1)]
    grad = holder[0]
    holder[0] = None
    return sys.getrefcount(grad)


_UNSHARED_REFCOUNT = _probe_refcount()


# A node is numbered when it is recorded, after the nodes of its inputs (its edges):
# creation order is a topological order of every graph (as PyTorch's sequence_nr).
_next_sequence_nr = itertools.count().__next__


_requires_grad_of = operator.attrgetter("_requires_grad")
#: The constructor ``Function.apply`` makes its outputs with (``Tensor._make``, read at each
#: call): ``evaluation_trace.recording`` swaps it for one that also notes every tensor made.
make_output = Tensor._make


def gradient_edge(t) -> tuple:
    """The ``(node, input_nr)`` an op records for input ``t``: where ``t``'s gradient goes
    (``torch.autograd.graph.get_gradient_edge``); ``(None, 0)`` if it needs none."""
    if not t._requires_grad:
        return _NO_EDGE
    if t.grad_fn is not None:
        return (t.grad_fn, t.output_nr)
    return (accumulator_of(t), 0)


_NO_EDGE = (None, 0)


def accumulator_of(leaf) -> AccumulateGrad:
    """The leaf's AccumulateGrad node, created on first use and shared while the graph lives."""
    ref = leaf._accum_ref
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(leaf)
        leaf._accum_ref = weakref.ref(acc)
    return acc
