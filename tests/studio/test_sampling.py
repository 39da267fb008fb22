"""Attribute-assignment sampling (omnivchat.studio.sampling, Eq. 7, Appendix C.2.1) and corpus sampling.

The law tests run both exact methods: enumeration (small spaces) and rejection (forced by setting
ENUMERATE_LIMIT to 0, with the enumerating function made to fail so the path cannot silently switch).
Seeds are fixed, so the chi-square tests are deterministic.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterator, Mapping

import pytest
from scipy.stats import chisquare

from omnivchat.studio import sampling
from omnivchat.studio.sampling import assignment_weight, sample_assignments, sample_passages

# Three attributes, a zero-probability value, two preference rules and an exclusion: 12 assignments of
# positive probability, 2 of them excluded.
ATTRS: dict[str, dict[str, float]] = {
    "emotion": {"happy": 0.5, "sad": 0.3, "angry": 0.2},
    "setting": {"indoor": 0.6, "outdoor": 0.4},
    "speaker": {"child": 0.5, "adult": 0.5, "robot": 0.0},
}
PREFS = [
    (lambda a: a["emotion"] == "sad" and a["setting"] == "outdoor", 3.0),
    (lambda a: a["speaker"] == "child", 0.5),
]
EXCL = [lambda a: a["emotion"] == "angry" and a["setting"] == "outdoor"]

# Five positive-weight assignments (one excluded), weights 0.35, 0.15, 0.21, 0.36, 0.14: far from equal.
TINY: dict[str, dict[str, float]] = {"x": {"a": 0.5, "b": 0.3, "e": 0.2}, "y": {"c": 0.7, "d": 0.3}}
TINY_PREFS = [(lambda a: a["x"] == "b" and a["y"] == "d", 4.0)]
TINY_EXCL = [lambda a: a["x"] == "e" and a["y"] == "d"]

N_DRAWS = 12_000


@pytest.fixture(params=["enumerate", "rejection"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test on one exact method, with the other made to fail."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("wrong sampling path")

    if request.param == "enumerate":
        monkeypatch.setattr(sampling, "_sample_rejection", forbidden)
    else:
        monkeypatch.setattr(sampling, "ENUMERATE_LIMIT", 0)
        monkeypatch.setattr(sampling, "_sample_enumerated", forbidden)
    yield request.param


def key(a: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(a.values())


def weights(attrs: dict[str, dict[str, float]], prefs: list, excl: list) -> dict[tuple[str, ...], float]:
    """Eq. 7's weight of every assignment of the full product space (zero-probability values included)."""
    names = list(attrs)
    out = {}
    for combo in itertools.product(*(attrs[n] for n in names)):
        out[combo] = assignment_weight(dict(zip(names, combo, strict=True)), attrs, prefs, excl)
    return out


def single_draws(attrs: dict[str, dict[str, float]], prefs: list, excl: list, n: int = 1) -> Counter:
    return Counter(
        tuple(key(a) for a in sample_assignments(attrs, n, preferences=prefs, exclusions=excl, seed=s))
        for s in range(N_DRAWS)
    )


# --- Eq. 7 -----------------------------------------------------------------------------------------------------


def test_weight_is_eq7_product_of_probabilities_and_matching_multipliers() -> None:
    def w(emotion: str, setting: str, speaker: str) -> float:
        return assignment_weight({"emotion": emotion, "setting": setting, "speaker": speaker}, ATTRS, PREFS, EXCL)

    assert w("happy", "indoor", "adult") == pytest.approx(0.5 * 0.6 * 0.5)  # no rule matches: multiplier 1
    assert w("sad", "outdoor", "adult") == pytest.approx(0.3 * 0.4 * 0.5 * 3.0)
    assert w("sad", "outdoor", "child") == pytest.approx(0.3 * 0.4 * 0.5 * 3.0 * 0.5)  # both rules
    assert w("angry", "outdoor", "adult") == 0.0  # excluded
    assert w("happy", "indoor", "robot") == 0.0  # zero-probability value
    assert assignment_weight({"emotion": "sad", "setting": "outdoor", "speaker": "adult"}, ATTRS) == pytest.approx(
        0.3 * 0.4 * 0.5
    )
    with pytest.raises(ValueError, match="speaker"):
        assignment_weight({"emotion": "sad", "setting": "outdoor"}, ATTRS)
    with pytest.raises(ValueError, match="setting"):
        assignment_weight({"emotion": "sad", "setting": "space", "speaker": "adult"}, ATTRS)


# --- Sampling laws -----------------------------------------------------------------------------------------------


def test_single_draw_follows_eq7_weights(path: str) -> None:
    w = weights(ATTRS, PREFS, EXCL)
    counts = single_draws(ATTRS, PREFS, EXCL)
    assert all(w[k[0]] > 0 for k in counts)  # nothing excluded, no zero-probability value
    cells = [k for k, wk in w.items() if wk > 0]
    total = sum(w[k] for k in cells)
    observed = [counts[(k,)] for k in cells]
    expected = [N_DRAWS * w[k] / total for k in cells]
    assert chisquare(observed, expected).pvalue > 1e-3
    # The same data reject the law without the preference rules: the test can tell them apart.
    base = weights(ATTRS, [], EXCL)
    base_total = sum(base[k] for k in cells)
    assert chisquare(observed, [N_DRAWS * base[k] / base_total for k in cells]).pvalue < 1e-6


def test_ordered_pair_follows_successive_sampling(path: str) -> None:
    """P(first a, then b) = w_a / W * w_b / (W - w_a): the key order is the successive-sampling order."""
    w = {k: v for k, v in weights(TINY, TINY_PREFS, TINY_EXCL).items() if v > 0}
    assert len(w) == 5
    big_w = sum(w.values())
    counts = single_draws(TINY, TINY_PREFS, TINY_EXCL, n=2)
    pairs = list(itertools.permutations(w, 2))
    assert set(counts) <= set(pairs)  # two distinct positive-weight assignments every time
    observed = [counts[p] for p in pairs]
    expected = [N_DRAWS * w[a] / big_w * w[b] / (big_w - w[a]) for a, b in pairs]
    assert sum(expected) == pytest.approx(N_DRAWS)
    assert chisquare(observed, expected).pvalue > 1e-3
    # ... and reject "two independent draws conditioned on being distinct" (P proportional to w_a * w_b).
    prod = {(a, b): w[a] * w[b] for a, b in pairs}
    z = sum(prod.values())
    assert chisquare(observed, [N_DRAWS * prod[p] / z for p in pairs]).pvalue < 1e-6


def test_excluded_and_zero_probability_never_appear(path: str) -> None:
    attrs = {"x": {"a": 0.25, "b": 0.25, "c": 0.5, "z": 0.0}, "y": {"p": 0.5, "q": 0.5, "r": 0.0}}
    excl = [lambda a: a["x"] == "c"]
    out = sample_assignments(attrs, 4, exclusions=excl, seed=3)  # the whole pool: {a, b} x {p, q}
    assert {key(a) for a in out} == {("a", "p"), ("a", "q"), ("b", "p"), ("b", "q")}
    for s in range(300):
        (a,) = sample_assignments(attrs, 1, exclusions=excl, seed=s)
        assert a["x"] in ("a", "b") and a["y"] in ("p", "q")


def test_multiplier_scales_odds(path: str) -> None:
    attrs = {"color": {"red": 0.25, "blue": 0.25, "green": 0.5}}
    prefs = [(lambda a: a["color"] == "red", 3.0)]
    counts = Counter(sample_assignments(attrs, 1, preferences=prefs, seed=s)[0]["color"] for s in range(6000))
    assert 2.6 < counts["red"] / counts["blue"] < 3.4
    assert 0.9 < counts["green"] / (2 * counts["blue"]) < 1.1


def test_multiplier_zero_removes_an_assignment(path: str) -> None:
    attrs = {"x": {"a": 0.5, "b": 0.5}, "y": {"c": 0.5, "d": 0.5}}
    prefs = [(lambda a: a["x"] == "a" and a["y"] == "c", 0.0)]
    for s in range(50):
        out = sample_assignments(attrs, 3, preferences=prefs, seed=s)
        assert sorted(key(a) for a in out) == [("a", "d"), ("b", "c"), ("b", "d")]


# --- Batches, pools, repeats --------------------------------------------------------------------------------------


def test_batch_is_distinct_up_to_pool_size(path: str) -> None:
    pool = {k for k, v in weights(ATTRS, PREFS, EXCL).items() if v > 0}
    for n in (1, 5, len(pool)):
        out = sample_assignments(ATTRS, n, preferences=PREFS, exclusions=EXCL, seed=n)
        assert len(out) == n
        assert len({key(a) for a in out}) == n
        assert {key(a) for a in out} <= pool


@pytest.mark.parametrize("method", ["enumerated", "rejection"])
def test_n_larger_than_pool_repeats_whole_rounds(method: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Appendix C.2.1: past the pool the race starts again with fresh keys, on either method (the rejection path,
    # the one every shipped config takes, raised here)
    if method == "rejection":
        monkeypatch.setattr(sampling, "ENUMERATE_LIMIT", 0)
        monkeypatch.setattr(sampling, "MAX_CONSECUTIVE_REJECTIONS", 5_000)
    pool = {k for k, v in weights(ATTRS, PREFS, EXCL).items() if v > 0}
    size = len(pool)
    assert size == 10
    draw = sample_assignments(ATTRS, 2 * size + 3, preferences=PREFS, exclusions=EXCL, seed=7)
    out = [key(a) for a in draw]
    assert len(out) == 2 * size + 3
    assert set(out[:size]) == pool  # every pool assignment once in the first |pool| ...
    assert set(out[size : 2 * size]) == pool  # ... then a fresh round ...
    assert len(set(out[2 * size :])) == 3 and set(out[2 * size :]) <= pool  # ... and the start of a third
    assert out[size : 2 * size] != out[:size]  # fresh keys, not the same order again
    assert draw == sample_assignments(ATTRS, 2 * size + 3, preferences=PREFS, exclusions=EXCL, seed=7)


def test_rejection_path_raises_when_almost_no_weight_is_left(monkeypatch: pytest.MonkeyPatch) -> None:
    # a pool too large to count is never taken as drawn: the long run of rejections still raises
    monkeypatch.setattr(sampling, "ENUMERATE_LIMIT", 0)
    monkeypatch.setattr(sampling, "POOL_COUNT_LIMIT", 0)
    monkeypatch.setattr(sampling, "MAX_CONSECUTIVE_REJECTIONS", 5_000)
    with pytest.raises(ValueError, match="no weight"):
        sample_assignments(ATTRS, 11, preferences=PREFS, exclusions=EXCL, seed=0)


def test_n_zero_gives_empty_list() -> None:
    assert sample_assignments(ATTRS, 0, seed=0) == []


# --- Bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("attrs", "prefs", "n", "match"),
    [
        ({"mood": {"a": 0.5, "b": 0.4}}, [], 1, "'mood'.*sum to"),
        ({"mood": {"a": 1.2, "b": -0.2}}, [], 1, "'mood'.*probability"),
        ({"mood": {"a": float("nan"), "b": 1.0}}, [], 1, "'mood'"),
        ({"mood": {}}, [], 1, "'mood' has no values"),
        ({}, [], 1, "no attributes"),
        ({"mood": {"a": 1.0}}, [(lambda a: True, -1.0)], 1, "multiplier"),
        ({"mood": {"a": 1.0}}, [], -1, "n must be >= 0"),
    ],
)
def test_bad_input_raises(attrs: dict, prefs: list, n: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        sample_assignments(attrs, n, preferences=prefs, seed=0)


def test_probabilities_within_tolerance_are_accepted() -> None:
    (a,) = sample_assignments({"mood": {"a": 0.5, "b": 0.5 + 5e-7}}, 1, seed=0)
    assert a["mood"] in ("a", "b")


@pytest.mark.parametrize("how", ["exclusion", "zero multiplier"])
def test_everything_excluded_raises(path: str, how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sampling, "MAX_CONSECUTIVE_REJECTIONS", 5_000)
    kwargs: dict = {"exclusions": [lambda a: True]} if how == "exclusion" else {"preferences": [(lambda a: True, 0.0)]}
    with pytest.raises(ValueError, match=r"no .*weight"):
        sample_assignments(ATTRS, 1, seed=0, **kwargs)


# --- Determinism --------------------------------------------------------------------------------------------------


def test_same_seed_same_output(path: str) -> None:
    def draw(seed: int) -> list[dict[str, str]]:
        return sample_assignments(ATTRS, 6, preferences=PREFS, exclusions=EXCL, seed=seed)

    assert draw(11) == draw(11)
    assert len({tuple(key(a) for a in draw(s)) for s in range(20)}) > 10


# --- A space too large to enumerate -------------------------------------------------------------------------------


def test_large_space_is_sampled_without_enumeration(monkeypatch: pytest.MonkeyPatch) -> None:
    """10 attributes x 10 values (10^10 assignments): enumerating would hang; the rejection path must be used."""

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("enumerated a 10^10-assignment space")

    monkeypatch.setattr(sampling, "_sample_enumerated", forbidden)
    attrs = {f"a{i}": {f"v{j}": 0.1 for j in range(10)} for i in range(10)}
    attrs["a9"] = {f"v{j}": (0.0 if j == 9 else 1 / 9) for j in range(10)}
    prefs = [(lambda a: a["a0"] == "v0", 5.0), (lambda a: a["a1"] == "v1" and a["a2"] != "v2", 2.0)]
    excl = [lambda a: a["a3"] == "v3"]
    out = sample_assignments(attrs, 1000, preferences=prefs, exclusions=excl, seed=1)
    assert len(out) == 1000
    assert len({key(a) for a in out}) == 1000
    assert all(list(a) == list(attrs) for a in out)
    assert all(a["a3"] != "v3" and a["a9"] != "v9" for a in out)
    assert all(attrs[name][value] > 0 for a in out for name, value in a.items())
    # a0 == v0 has odds 5 against each of the other nine values: share 5 / 14 (vs 1 / 10 without the rule).
    share = sum(a["a0"] == "v0" for a in out) / len(out)
    assert 0.31 < share < 0.41
    assert out == sample_assignments(attrs, 1000, preferences=prefs, exclusions=excl, seed=1)


# --- Corpus sampling ----------------------------------------------------------------------------------------------

CORPUS = [("en", f"en-{i}") for i in range(6)] + [("zh", f"zh-{i}") for i in range(4)]


def lang(p: tuple[str, str]) -> str:
    return p[0]


def test_sample_passages_balances_languages() -> None:
    seen_majority: Counter[str] = Counter()
    for s in range(200):
        out = sample_passages(CORPUS, 3, language_of=lang, rng=random.Random(s))
        assert len(out) == 3 and len(set(out)) == 3
        counts = Counter(lang(p) for p in out)
        assert sorted(counts.values()) == [1, 2]
        seen_majority[counts.most_common(1)[0][0]] += 1
    assert set(seen_majority) == {"en", "zh"}  # the language order is random


def test_sample_passages_uniform_within_language_and_skips_exhausted() -> None:
    picks: Counter[tuple[str, str]] = Counter()
    for s in range(3000):
        picks.update(p for p in sample_passages(CORPUS, 2, language_of=lang, rng=random.Random(s)) if p[0] == "zh")
    assert len(picks) == 4 and max(picks.values()) / min(picks.values()) < 1.25
    corpus = [("en", "only")] + [("zh", f"zh-{i}") for i in range(5)]
    for s in range(50):
        out = sample_passages(corpus, 3, language_of=lang, rng=random.Random(s))
        assert ("en", "only") in out and len(set(out)) == 3


def test_sample_passages_deterministic_and_errors() -> None:
    assert sample_passages(CORPUS, 3, language_of=lang, rng=random.Random(5)) == sample_passages(
        CORPUS, 3, language_of=lang, rng=random.Random(5)
    )
    assert sample_passages(CORPUS, 0, language_of=lang, rng=random.Random(0)) == []
    with pytest.raises(ValueError, match=r"need 3 .* only 2"):
        sample_passages(CORPUS[:2], 3, language_of=lang, rng=random.Random(0))
