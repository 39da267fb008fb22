"""diagnose(): the four-condition arithmetic, intervals, flags and the prior-floor refusal."""

import pytest

from omnivchat.diagnostics import diagnose


def grid(both, video_only, audio_only, neither):
    return {"both": both, "video_only": video_only, "audio_only": audio_only, "neither": neither}


def test_seed_broken_model_is_caught():
    # the seed's example: video skill 0, fusion skill 0 -> both 30%, video_only 0, audio_only 30%, neither 0
    d = diagnose(grid([1, 1, 1] + [0] * 7, [0] * 10, [1, 1, 1] + [0] * 7, [0] * 10))
    assert (d.fusion_gain, d.video_reliance, d.audio_reliance, d.prior_floor) == pytest.approx((0.0, 0.0, 0.3, 0.0))
    assert d.flags == {"no_fusion", "video_ignored"} and not d.refused
    assert d.lines[0].startswith("NO FUSION") and "VIDEO IGNORED" in d.lines[1]
    assert d.verdict == "no fusion, video ignored"


def test_healthy_model_is_not_flagged():
    d = diagnose(grid([1] * 8 + [0, 1], [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0, 0], [0] * 10))
    assert d.fusion_gain == pytest.approx(0.8) and d.flags == set() and d.verdict == "healthy"
    lo, hi = d.intervals["fusion_gain"]
    assert lo <= 0.8 <= hi and lo > 0.0
    assert d.means == {"both": 0.9, "video_only": 0.1, "audio_only": 0.1, "neither": 0.0}


def test_prior_floor_refusal_comes_first():
    d = diagnose(grid([1] * 10, [1] * 10, [1] * 10, [1] * 9 + [0]))
    assert d.refused and d.flags == {"prior_floor_high"}
    assert d.lines[0].startswith("PRIOR FLOOR HIGH") and "no fusion gain is reported" in d.lines[0]
    # a refused diagnosis carries no fusion gain and no interval for it, in the model and in its JSON
    assert d.fusion_gain is None and "fusion_gain" not in d.intervals
    dumped = d.model_dump(mode="json")
    assert dumped["fusion_gain"] is None and "fusion_gain" not in dumped["intervals"]
    # the floor is always reported with its interval
    assert "prior_floor" in d.intervals and "neither" in d.intervals
    # the same floor at a chance level that explains it is not refused
    assert not diagnose(grid([1] * 10, [0] * 10, [0] * 10, [1] * 5 + [0] * 5), chance=0.5).refused


def test_intervals_are_paired_and_deterministic():
    scores = grid([1, 0, 1, 1, 0, 1], [0, 0, 1, 0, 0, 1], [1, 0, 0, 1, 0, 0], [0] * 6)
    a, b = diagnose(scores, seed=3), diagnose(scores, seed=3)
    assert a.intervals == b.intervals
    for name, (lo, hi) in a.intervals.items():
        assert lo <= hi, name


@pytest.mark.parametrize(
    "bad",
    [
        {"both": [1], "video_only": [1], "audio_only": [1]},
        grid([1, 0], [1], [1, 0], [0, 0]),
        grid([], [], [], []),
        grid([float("nan")], [0], [0], [0]),
    ],
)
def test_bad_input(bad):
    with pytest.raises(ValueError):
        diagnose(bad)


def test_at_chance_with_both_streams_blames_no_stream():
    d = diagnose(grid([0] * 6, [0] * 6, [0] * 6, [0] * 6))
    assert d.flags == {"no_fusion"} and any(line.startswith("AT CHANCE") for line in d.lines)


def test_at_chance_no_fusion_story_is_told_either_way():
    # a gain among guesses (both a little above the single streams, all at chance 0.25) is no evidence of fusion
    d = diagnose(grid([1, 0, 0, 0, 1, 0, 0, 0], [0] * 8, [0] * 8, [0] * 8), chance=0.25)
    text = " ".join(d.lines)
    assert d.verdict == "below chance" or d.verdict == "at chance"
    assert "does better with both streams" not in text and "one modality at a time" not in text
    assert "not interpretable" in text and "IGNORED" not in text
    flat = diagnose(grid([0] * 6, [0] * 6, [0] * 6, [0] * 6))
    assert flat.verdict == "at chance" and "one modality at a time" not in " ".join(flat.lines)


def test_below_chance_is_not_called_at_chance_and_points_at_unparsed_replies():
    d = diagnose(grid([0] * 8, [0] * 8, [0] * 8, [0] * 8), chance=0.25)
    line = next(line for line in d.lines if "CHANCE" in line)
    assert line.startswith("BELOW CHANCE") and "unparsed" in line


def test_a_small_floor_on_a_rubric_bench_does_not_hide_a_large_gain():
    """Real models score a little above 0 with no media on almost any rubric (a language gate, a polite tier):
    a floor of about 0.03 must not hide a fusion gain of 0.40 (chance 0, default floor margin 0.10)."""
    n = 100
    both = [1.0] * 60 + [0.0] * 40
    single = [1.0] * 20 + [0.0] * 80
    neither = [0.25] * 12 + [0.0] * 88  # mean 0.03, lower bound well above 0
    d = diagnose(grid(both, single, single, neither))
    assert d.intervals["neither"][0] > 0.0  # the old rule (lower bound > chance) refused this grid
    assert not d.refused and d.fusion_gain == pytest.approx(0.40) and d.flags == set()
    assert d.floor_margin == 0.10 and len(both) == n
    assert "prior floor 0.030 (95% CI" in d.lines[-1]
    # with no margin, the same grid is refused
    strict = diagnose(grid(both, single, single, neither), floor_margin=0.0)
    assert strict.refused and strict.fusion_gain is None


def test_floor_margin_is_measured_from_chance():
    scores = grid([1] * 10, [0] * 10, [0] * 10, [1] * 8 + [0] * 2)
    assert diagnose(scores, chance=0.25, floor_margin=0.10).refused  # floor lower bound ~0.5 > 0.35
    assert not diagnose(scores, chance=0.25, floor_margin=0.6).refused
    with pytest.raises(ValueError, match="floor_margin"):
        diagnose(scores, floor_margin=-0.1)
