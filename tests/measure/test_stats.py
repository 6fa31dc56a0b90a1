"""One statistics class for timing samples (measure.stats.Stats): known quartiles, the same
numbers NumPy gives, and the measurement and the cells table both read it."""
from __future__ import annotations

import numpy as np
import pytest

from diffcompare.measure.stats import Stats
from diffcompare.measure.timing import Timing


def test_known_values_of_a_fixed_sample():
    s = Stats([7.0, 1.0, 3.0, 5.0])            # sorted: 1 3 5 7; positions 0.75, 1.5, 2.25
    assert (s.n, s.min, s.max) == (4, 1.0, 7.0)
    assert s.q1 == pytest.approx(2.5) and s.median == pytest.approx(4.0)
    assert s.q3 == pytest.approx(5.5) and s.iqr == pytest.approx(3.0)
    assert s.quantile(0) == 1.0 and s.quantile(1) == 7.0


def test_one_sample_has_no_spread():
    s = Stats([2e-3])
    assert s.q1 == s.median == s.q3 == 2e-3 and s.iqr == 0.0 and s.n == 1


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
def test_quartiles_agree_with_numpy(n):
    x = np.random.default_rng(n).lognormal(size=n)
    s = Stats(list(x))
    np.testing.assert_allclose([s.q1, s.median, s.q3], np.percentile(x, [25, 50, 75]), rtol=1e-14)


def test_bad_samples_are_refused():
    with pytest.raises(ValueError, match="at least one sample"):
        Stats([])
    with pytest.raises(ValueError, match="finite"):
        Stats([1.0, float("nan")])
    with pytest.raises(ValueError, match="between 0 and 1"):
        Stats([1.0]).quantile(1.5)


def test_timing_and_the_cells_table_use_it():
    from diffcompare.results.cells import _sample_quartiles

    samples = [3e-4, 1e-4, 2e-4, 9e-4]
    t = Timing(samples, loops=10)
    assert (t.stats.median, t.stats.iqr) == (Stats(samples).median, Stats(samples).iqr)
    assert _sample_quartiles(samples) == (Stats(samples).q1, Stats(samples).q3)
    assert all(np.isnan(_sample_quartiles([])))
