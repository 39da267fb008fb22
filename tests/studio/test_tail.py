"""Tail-artifact detection and repair on decoded audio (omnivchat.synth, Appendix D.1.2, Eq. 8-12)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.signal import butter, sosfiltfilt

from omnivchat.synth import (
    FADE_S,
    MARGIN_S,
    T_BOUND_S,
    TailRepair,
    apply_fade,
    background_level,
    content_end,
    cutoff_block,
    fade_gain,
    locate_cutoff,
    repair_tail,
    support_bound,
    tail_scores,
)
from omnivchat.synth._signals import add_click, speech_like

SR = 44100


def hf_energy_db(x: np.ndarray, sr: int, at: int, width_s: float = 0.002) -> float:
    """Energy above 6 kHz (8th-order zero-phase Butterworth) in a window starting 0.5 ms before ``at``."""
    sos = butter(8, 6000, btype="highpass", fs=sr, output="sos")
    h = sosfiltfilt(sos, np.asarray(x, dtype=np.float64))
    a, b = at - round(0.0005 * sr), at + round(width_s * sr)
    return 10 * np.log10(float(np.sum(h[a:b] ** 2)) + 1e-30)


# --- Eq. 8 -------------------------------------------------------------------------------------------


def test_content_end_is_one_past_the_last_sample_above_the_threshold() -> None:
    x = np.zeros(1000, np.float32)
    x[100] = 0.5  # peak: threshold max(1e-4, 5e-4) = 5e-4
    x[700] = 6e-4  # above it
    x[800] = 5e-4  # equal: not above (strict inequality)
    x[900] = -4e-4
    assert content_end(x, SR) == 701


def test_content_end_absolute_floor_applies_to_quiet_clips() -> None:
    x = np.zeros(1000)
    x[10] = 0.05  # 60 dB below this peak is 5e-5, under the 1e-4 floor
    x[500] = 9e-5
    x[400] = 2e-4
    assert content_end(x, 16000) == 401


@pytest.mark.parametrize("x", [np.zeros(0), np.zeros(500), np.full(500, 1e-4), np.full(3, -9e-5)])
def test_content_end_of_silence_is_zero(x: np.ndarray) -> None:
    assert content_end(x, SR) == 0


def test_content_end_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="NaN"):
        content_end(np.array([0.1, np.nan]), SR)
    with pytest.raises(ValueError, match="mono"):
        content_end(np.zeros((10, 2)), SR)
    with pytest.raises(ValueError, match="sample rate"):
        content_end(np.zeros(10), 0)


# --- Eq. 9 and 10 -------------------------------------------------------------------------------------


def test_background_window_is_30_to_80_blocks_before_the_peak_with_fallback() -> None:
    q = np.ones(160)
    q[10:60] = 0.1  # exactly blocks k*-80 .. k*-31 for k* = 90
    q[90] = 50.0
    beta, fallback = background_level(q, 90)
    assert (beta, fallback) == (0.1, False)
    q[60] = 7.0  # k* - 30 is outside the half-open window
    assert background_level(q, 90) == (0.1, False)
    # Peak 34 blocks into Z: P = [0, 4) has 4 < 5 blocks -> median over all of Z.
    beta, fallback = background_level(q, 34)
    assert fallback and beta == float(np.median(q))


def test_three_block_look_back_spans_brief_dips() -> None:
    q = np.full(160, 0.01)
    q[100:121] = 1.0  # a burst from block 100 to the peak at 120 ...
    q[110:112] = 0.001  # ... with a two-block dip inside it
    q[120] = 2.0
    k0, theta = cutoff_block(q, 120, beta=0.01)
    assert theta == pytest.approx(max(0.02, 2.0 * 10 ** (-45 / 20)))
    assert k0 == 100  # the dip (2 blocks < 3) does not stop the scan
    q[110:113] = 0.001  # a three-block dip does: the scan stops just after it
    assert cutoff_block(q, 120, beta=0.01)[0] == 113


def test_look_back_always_finds_a_block() -> None:
    q = np.ones(20)
    q[5] = 10.0
    assert cutoff_block(q, 5, beta=0.1)[0] == 0  # nothing below theta: the first block of Z (empty look-back)


def test_locate_cutoff_puts_n0_a_margin_before_the_click_onset() -> None:
    x = speech_like(SR, 2.0, seed=3, trailing=0.1)
    n_end = content_end(x, SR)
    at = n_end - round(0.040 * SR)
    cut = locate_cutoff(add_click(x, SR, at), SR)
    assert not cut.fallback and cut.peak_db > 8
    block, margin = round(0.001 * SR), round(MARGIN_S * SR)
    assert cut.onset_sample is not None and cut.onset_sample % block == 0  # blocks start at multiples of 1 ms
    assert at - 2 * block <= cut.onset_sample <= at
    assert cut.n0 == cut.onset_sample - margin


def test_locate_cutoff_never_goes_more_than_t_before_the_content_end() -> None:
    x = speech_like(SR, 2.0, seed=4, trailing=0.1)
    n_end = content_end(x, SR)
    y = add_click(x, SR, n_end - round(0.120 * SR))  # click 120 ms before the end of speech
    cut = locate_cutoff(y, SR, n_end)
    assert cut.n0 == n_end - round(T_BOUND_S * SR)


def abrupt_tone(sr: int, seconds: float = 1.5, trailing: float = 0.1) -> np.ndarray:
    """A 180 Hz tone (with a -60 dB noise floor) at full level that stops within 4 ms (too fast for a
    fade, too smooth for a click), then digital silence: no high-band peak, yet a cut-off."""
    t = np.arange(round(seconds * sr)) / sr
    noise = 1e-3 * np.random.default_rng(0).standard_normal(t.size)
    x = (0.3 * np.sin(2 * np.pi * 180 * t) + noise) * np.minimum(1, t / 0.05)
    stop = round(0.004 * sr)
    x[-stop:] *= 0.5 * (1 + np.cos(np.pi * np.arange(1, stop + 1) / stop))
    return np.concatenate([x, np.zeros(round(trailing * sr))]).astype(np.float32)


def test_no_high_band_peak_falls_back_to_the_content_end() -> None:
    x = abrupt_tone(SR)
    cut = locate_cutoff(x, SR)
    assert cut.fallback and cut.peak_db < 8 and cut.n0 == cut.n_end == content_end(x, SR)


# --- Eq. 11 and 12 -------------------------------------------------------------------------------------


def test_fade_gain_is_the_raised_cosine_with_both_endpoints() -> None:
    n0, fade = 1000, 882
    n = np.arange(n0 - fade - 5, n0 + 5)
    g = fade_gain(n, n0, fade)
    assert np.all(g[n < n0 - fade] == 1.0)
    assert g[n == n0 - fade][0] == 1.0
    assert g[n == n0 - 1][0] == pytest.approx(0.0, abs=1e-15)
    assert np.all(g[n >= n0] == 0.0)
    assert np.all(np.diff(g) <= 1e-15)
    mid = n0 - fade + (fade - 1) / 2
    assert fade_gain(np.array([mid]), n0, fade)[0] == pytest.approx(0.5)


def test_apply_fade_touches_only_the_tail_and_keeps_dtype_and_channels() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, (5000, 2)).astype(np.float32)
    y = apply_fade(x, 4000, SR)
    fade = round(FADE_S * SR)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert np.array_equal(y[: 4000 - fade], x[: 4000 - fade])
    assert np.all(y[4000:] == 0)
    ratio = y[4000 - fade : 3999] / x[4000 - fade : 3999]
    assert np.allclose(ratio[:, 0], ratio[:, 1], atol=1e-6)  # the same gain on every channel


def test_support_bound() -> None:
    assert support_bound(10_000, SR) == 10_000 - round(0.080 * SR) - round(0.020 * SR)


# --- detection and repair -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sr", [44100, 48000])
def test_click_before_the_end_of_speech_is_found_and_removed(seed: int, sr: int) -> None:
    x = speech_like(sr, 2.5, seed=seed, trailing=0.0, noise_db=-70)
    n_end = content_end(x, sr)
    at = n_end - round((0.015 + 0.01 * seed) * sr)  # 15-65 ms before the end of speech
    xc = add_click(x, sr, at, amplitude=0.25, seed=seed)
    assert tail_scores(x, sr) is not None and not tail_scores(x, sr).flagged  # type: ignore[union-attr]

    y, info = repair_tail(xc, sr)

    assert info.scores_before is not None and info.scores_before.transient_flag
    assert info.changed and info.reason == "repaired" and info.passes >= 1
    assert info.cutoff is not None and info.cutoff <= at
    assert hf_energy_db(xc, sr, at) - hf_energy_db(y, sr, at) >= 30.0
    assert info.scores_after is not None and not info.scores_after.transient_flag
    assert y.shape == xc.shape and y.dtype == xc.dtype
    bound = support_bound(info.n_end, sr)
    assert np.array_equal(y[:bound], xc[:bound])


def test_two_clicks_take_two_passes() -> None:
    x = speech_like(SR, 2.0, seed=11, trailing=0.0, noise_db=-70)
    n_end = content_end(x, SR)
    near, far = n_end - round(0.010 * SR), n_end - round(0.050 * SR)
    xc = add_click(add_click(x, SR, near, amplitude=0.5), SR, far, amplitude=0.25, seed=1)
    y, info = repair_tail(xc, SR)
    assert info.passes == 2 and info.changed
    assert info.cutoff is not None and info.cutoff <= far
    for at in (near, far):
        assert hf_energy_db(xc, SR, at) - hf_energy_db(y, SR, at) >= 30.0


def test_a_click_too_far_before_the_end_is_not_chased_past_the_bound() -> None:
    x = speech_like(SR, 2.0, seed=12, trailing=0.0, noise_db=-70)
    n_end = content_end(x, SR)
    near, far = n_end - round(0.070 * SR), n_end - round(0.130 * SR)
    xc = add_click(add_click(x, SR, near, amplitude=0.5), SR, far, amplitude=0.3, seed=2)
    n_end = content_end(xc, SR)  # the clicks raise the peak, hence Eq. 8's threshold
    y, info = repair_tail(xc, SR)
    assert info.n_end == n_end and info.passes == 2
    assert info.cutoff == n_end - round(T_BOUND_S * SR)  # pass 2 moved the onset earlier, up to the bound
    bound = support_bound(n_end, SR)
    assert np.array_equal(y[:bound], xc[:bound])  # so the far click stays (Eq. 12 wins)
    assert hf_energy_db(xc, SR, near) - hf_energy_db(y, SR, near) >= 30.0


CLEAN_CASES = [
    ("fade", -90.0, 0.15),  # natural decay, then digital silence
    ("fade", -90.0, 0.0),  # natural decay right at the end of the file
    ("fade", -50.0, 0.2),  # room tone continues to the end of the file
    ("fricative", -90.0, 0.1),  # ends on a fricative
    ("fricative", -55.0, 0.0),
]


@pytest.mark.parametrize("sr", [44100, 16000])
@pytest.mark.parametrize(("ending", "noise_db", "trailing"), CLEAN_CASES)
@pytest.mark.parametrize("seed", range(3))
def test_clean_tail_is_returned_unchanged_sample_for_sample(
    sr: int, ending: str, noise_db: float, trailing: float, seed: int
) -> None:
    x = speech_like(sr, 2.5, seed=seed, ending=ending, trailing=trailing, noise_db=noise_db)  # type: ignore[arg-type]
    y, info = repair_tail(x, sr)
    assert not info.changed and info.reason == "clean" and info.passes == 0 and info.cutoff is None
    assert y.dtype == x.dtype and np.array_equal(y, x)
    assert y is not x  # a copy: the caller's array is never aliased
    assert info.scores_after == info.scores_before


def test_clean_float64_input_keeps_its_dtype_and_values() -> None:
    x = speech_like(SR, 2.0, seed=5).astype(np.float64)
    y, info = repair_tail(x, SR)
    assert y.dtype == np.float64 and np.array_equal(y, x) and not info.changed


@pytest.mark.parametrize("sr", [44100, 16000])
def test_cutoff_during_active_sound_is_flagged_and_faded(sr: int) -> None:
    x = speech_like(sr, 2.0, seed=2, ending="cut", trailing=0.1)
    n_end = content_end(x, sr)
    y, info = repair_tail(x, sr)
    assert info.scores_before is not None and info.scores_before.truncation_flag
    assert info.changed and info.cutoff is not None
    assert np.all(y[info.cutoff :] == 0) and info.cutoff <= n_end
    assert info.scores_after is not None and not info.scores_after.flagged
    assert np.array_equal(y[: support_bound(n_end, sr)], x[: support_bound(n_end, sr)])


def test_fallback_fades_at_the_content_end_or_does_nothing_when_asked() -> None:
    x = abrupt_tone(SR)
    n_end = content_end(x, SR)
    y, info = repair_tail(x, SR)
    assert info.reason == "fallback" and info.cutoff == n_end and info.changed
    fade = round(FADE_S * SR)
    assert np.array_equal(y[: n_end - fade], x[: n_end - fade]) and y[n_end - 1] == 0
    y2, info2 = repair_tail(x, SR, fallback="none")
    assert not info2.changed and info2.reason == "peak below 8 dB" and np.array_equal(y2, x)


@pytest.mark.parametrize(
    ("x", "reason"),
    [
        (np.zeros(0, np.float32), "empty"),
        (np.zeros(SR, np.float32), "silent"),
        (np.full(SR, 5e-5, np.float32), "silent"),
        (np.array([0.9], np.float32), "too short"),
        (np.full(round(0.2 * SR), 0.5, np.float32), "too short"),  # 200 ms of content, loud and cut
    ],
)
def test_silent_and_very_short_inputs_come_back_unchanged(x: np.ndarray, reason: str) -> None:
    y, info = repair_tail(x, SR)
    assert info.reason == reason and not info.changed and info.passes == 0
    assert np.array_equal(y, x) and y.shape == x.shape
    assert tail_scores(x, SR) is None


def test_low_rate_audio_is_detected_but_not_repaired() -> None:
    x = speech_like(8000, 1.5, seed=1, ending="cut", trailing=0.0)
    y, info = repair_tail(x, 8000)
    assert info.reason == "rate too low" and np.array_equal(y, x)


def test_info_is_a_small_frozen_record() -> None:
    _, info = repair_tail(speech_like(SR, 1.0, seed=1), SR)
    assert isinstance(info, TailRepair)
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.changed = True  # type: ignore[misc]
    assert {f.name for f in dataclasses.fields(info)} >= {
        "changed",
        "cutoff",
        "n_end",
        "passes",
        "scores_before",
        "scores_after",
        "reason",
    }


# --- Eq. 12, for any input ------------------------------------------------------------------------------


@st.composite
def signals(draw: st.DrawFn) -> tuple[np.ndarray, int]:
    sr = draw(st.sampled_from([16000, 44100]))
    kind = draw(st.sampled_from(["speech", "noise", "tone"]))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    if kind == "speech":
        ending = draw(st.sampled_from(["fade", "cut", "fricative"]))
        x = speech_like(sr, draw(st.floats(0.3, 1.6)), seed=seed, ending=ending, trailing=draw(st.floats(0, 0.2)))
    elif kind == "noise":
        x = (draw(st.floats(1e-5, 1.0)) * rng.standard_normal(round(draw(st.floats(0, 1.0)) * sr))).astype(np.float32)
    else:
        t = np.arange(round(draw(st.floats(0, 1.0)) * sr)) / sr
        x = (draw(st.floats(1e-5, 1.0)) * np.sin(2 * np.pi * draw(st.floats(50, 7000)) * t)).astype(np.float32)
    for _ in range(draw(st.integers(0, 3))):  # clicks anywhere (often near the end), any size
        if x.size:
            near_end = st.integers(max(0, x.size - round(0.2 * sr)), x.size - 1)
            at = draw(st.one_of(st.integers(0, x.size - 1), near_end))
            x = add_click(x, sr, at, amplitude=draw(st.floats(0.001, 1.0)), seed=seed)
    zeros = draw(st.integers(0, round(0.1 * sr)))  # digital silence after
    return np.concatenate([x, np.zeros(zeros, np.float32)]), sr


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(signals())
def test_no_sample_before_the_eq12_bound_ever_changes(case: tuple[np.ndarray, int]) -> None:
    x, sr = case
    y, info = repair_tail(x, sr)
    assert y.shape == x.shape and y.dtype == x.dtype
    bound = max(0, support_bound(info.n_end, sr))
    assert np.array_equal(y[:bound], x[:bound])
    assert info.changed == (not np.array_equal(y, x))
    if info.changed:
        assert info.cutoff is not None and info.cutoff >= info.n_end - round(T_BOUND_S * sr)
        assert np.all(y[max(0, info.cutoff) :] == 0)
        assert 1 <= info.passes <= 3
    else:
        assert info.passes == 0 and info.cutoff is None
