"""Values as the seed threads print them: short, library-free text for a reader."""
from __future__ import annotations

import numpy as np


def fmt(value, digits: int = 6) -> str:
    """A value as the seed threads print it, ``digits`` significant digits, library-free:
    ``None``, ``True``, ``3``, ``[0.5, 0.5]``, ``[[1, 2], [3, 4]]``.

    >>> fmt(np.array([0.5, 1 / 3])), fmt(2.0), fmt(None), fmt(np.array(3.0))
    ('[0.5, 0.333333]', '2', 'None', '3')
    """
    if value is None or isinstance(value, (bool, str)):
        return str(value)
    a = np.asarray(value, dtype=np.float64)
    if a.ndim == 0:
        return f"{a.item():.{digits}g}"
    return np.array2string(a, separator=", ", max_line_width=90, threshold=40,
                           formatter={"float_kind": lambda v: f"{v:.{digits}g}"})
