"""Holm's step-down adjustment against a hand computation."""

from __future__ import annotations

import pytest

from omnivchat.scoring.statistics import holm


def test_holm_matches_a_hand_computation() -> None:
    # Sorted: 0.01, 0.03, 0.04, 0.2 (m = 4) -> 4 x 0.01 = 0.04; 3 x 0.03 = 0.09; 2 x 0.04 = 0.08, raised to 0.09
    # (monotone); 1 x 0.2 = 0.2. Given back in the input's order.
    assert holm([0.04, 0.01, 0.2, 0.03]) == pytest.approx([0.09, 0.04, 0.2, 0.09])


def test_holm_caps_at_one_and_leaves_untested_out_of_the_family() -> None:
    # None is no test: the family is the two p-values, so 2 x 0.3 = 0.6 and max(0.6, 0.7) = 0.7.
    assert holm([0.3, None, 0.7]) == [pytest.approx(0.6), None, pytest.approx(0.7)]
    assert holm([0.6, 0.9]) == [1.0, 1.0]
    assert holm([]) == []
