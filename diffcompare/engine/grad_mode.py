"""Grad mode: whether operations are recorded into the autograd graph.

Like PyTorch, the switch is per thread.  ``no_grad`` is what an optimizer step
or an evaluation loop uses; ``enable_grad`` turns recording back on inside it.

>>> from diffcompare.engine import Tensor, no_grad
>>> w = Tensor([1.0, 2.0], requires_grad=True)
>>> with no_grad():
...     y = w * 2
>>> y.requires_grad, y.grad_fn is None
(False, True)
"""
from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    enabled = True   # the default in every thread


#: This thread's grad mode: ``state.enabled`` is what :func:`is_grad_enabled` returns.  The
#: engine's hot paths (``Function.apply``, the backward loop) read and set it directly.
state = _State()


def is_grad_enabled() -> bool:
    """True when new operations are recorded for backward."""
    return state.enabled


def set_grad_enabled(mode: bool) -> None:
    state.enabled = bool(mode)


class _GradModeContext:
    """Context manager and decorator that sets grad mode and restores it on exit."""

    mode: bool

    def __new__(cls, func=None):
        # ``@no_grad`` without parentheses: decorate ``func`` straight away
        self = super().__new__(cls)
        return self(func) if callable(func) else self

    def __enter__(self):
        self._prev = is_grad_enabled()
        set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)

        return wrapper

    def _wrap_generator(self, fn):
        """A generator runs its body at each ``next``, not at the call: set the mode
        around every resumption and restore the caller's mode at each ``yield``
        (as PyTorch's decorator does)."""
        mode = type(self)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            resume, arg = gen.send, None
            while True:
                try:
                    with mode():
                        request = resume(arg)
                except StopIteration as stop:
                    return stop.value
                try:
                    resume, arg = gen.send, (yield request)
                except GeneratorExit:
                    with mode():
                        gen.close()
                    raise
                except BaseException as exc:   # thrown into us: pass it on to the generator
                    resume, arg = gen.throw, exc

        return wrapper


class no_grad(_GradModeContext):
    """Do not record operations: results have ``requires_grad=False``, no graph is built."""

    mode = False


class enable_grad(_GradModeContext):
    """Record operations again (inside a ``no_grad`` block)."""

    mode = True
