"""Multiple-choice answers, shared by every benchmark that asks for one option: strict parsing (the headline),
lenient parsing (reported apart), and accuracy with a seeded percentile-bootstrap interval.

Strict parsing reads the one option a reply states, by its letter as a standalone token or by its text, and never
"the first capital letter anywhere" (the peers' bug that reads "Based on..." as B). A reply that states none or
several options is unparsed: in the denominator, wrong, and counted. Reasoning written into the reply
(``<think>...</think>``) is removed before either parse; a reply cut off inside it is unparsed.
"""

from __future__ import annotations

import re

import numpy as np
from pydantic import BaseModel

from omnivchat.scoring.spoken import answer_matches, contains_phrase, normalize

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0
BOOTSTRAP_LEVEL = 0.95


# --- parsing -------------------------------------------------------------------------------------------------

# Reasoning written into the reply text: <think>...</think> or <thinking>...</thinking> (any case, spaces inside the
# tags). A closing tag with no opening one means the chat template opened the block in the prompt, so everything
# before it is reasoning; an opening tag never closed means the reply was cut off while thinking. (A server's
# separate reasoning_content is stored apart by the routes and never reaches the reply text parsed here.)
_THINK_BLOCK = re.compile(r"<\s*think(?:ing)?\b[^<>]*>.*?<\s*/\s*think(?:ing)?\s*>", re.IGNORECASE | re.DOTALL)
_THINK_EMPTY = re.compile(r"<\s*think(?:ing)?\s*/\s*>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<\s*think(?:ing)?\b[^<>/]*>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"<\s*/\s*think(?:ing)?\s*>", re.IGNORECASE)


def strip_reasoning(reply: str) -> str | None:
    """The reply with its reasoning removed (``<think>A seems wrong</think>C`` -> ``C``); None when the reply was
    cut off inside a reasoning block (an opening tag never closed), which states no answer."""
    text = _THINK_EMPTY.sub(" ", _THINK_BLOCK.sub(" ", reply))
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    return None if _THINK_OPEN.search(text) else text


_LETTER_TOKEN = re.compile(r"(?<![A-Za-z0-9'\-])([A-Z])(?![A-Za-z0-9'\-])")
_ANSWER_IS = re.compile(r"\b(?:answer|option|choice)\s*(?:is|:|would be|=)?\s*\(?([A-Za-z])\b", re.IGNORECASE)
_WORD_AFTER = re.compile(r"\s+([a-z][a-z']*)")
# Words after "A" or "I" that show it is an option letter, not the article or the pronoun ("A is", "A or C").
_LETTER_VERBS = frozenset({"is", "was", "seems", "appears", "looks", "matches", "fits", "corresponds", "or", "and"})


def _letter_matches(reply: str, letters: str) -> list[re.Match[str]]:
    """The option letters a reply states as standalone tokens, in order. "A" and "I" followed by a lowercase word
    are the article and the pronoun ("A cat", "I think"), unless that word is a verb about the option ("A is") or
    joins options ("A or C")."""
    found = []
    for m in _LETTER_TOKEN.finditer(reply):
        letter = m.group(1)
        if letter not in letters:
            continue
        if letter in "AI":
            after = _WORD_AFTER.match(reply, m.end())
            if after and after.group(1) not in _LETTER_VERBS:
                continue
        found.append(m)
    return found


def _letter_tokens(reply: str, letters: str) -> list[str]:
    return [m.group(1) for m in _letter_matches(reply, letters)]


def _option_texts(reply: str, options: tuple[str, ...] | None, letters: str) -> list[str]:
    """The letters of the options whose text a reply states (negation-aware, whole tokens); an option whose text
    lies inside another stated option's text is not counted again ("red" inside "dark red")."""
    if not options:
        return []
    stated = [k for k, text in enumerate(options) if contains_phrase(reply, text)]
    kept = [k for k in stated if not any(j != k and normalize(options[k]) in normalize(options[j]) for j in stated)]
    return [letters[k] for k in kept]


def _placeholder(letter: str) -> str:
    # One word the spoken matcher reads as a plain word, so its negation and retraction rules apply to the letter.
    return f"optionletter{letter.lower()}"


def _answered(reply: str, letters: str, options: tuple[str, ...] | None) -> str | None:
    """The one option a reply states, once reasoning is removed.

    A reply that names one option is read as it always was. Only when it names several does it matter how: an
    option named in a negation ("C, not B", "C (not B)"), as one side of "or", or to be rejected ("B? No, C.", "I
    thought B, but it's C") is no answer (``scoring.spoken.answer_matches``), and if exactly one other is stated,
    that is the reading. So no reply that had a reading gets another one.
    """
    matches = _letter_matches(reply, letters)
    by_text = _option_texts(reply, options, letters)
    stated = {m.group(1) for m in matches} | set(by_text)
    if len(stated) < 2:
        return next(iter(stated), None)
    masked, end = [], 0
    for m in matches:
        masked += [reply[end : m.start()], _placeholder(m.group(1))]
        end = m.end()
    masked_reply = "".join([*masked, reply[end:]])
    answers = {m.group(1) for m in matches if answer_matches(masked_reply, _placeholder(m.group(1)))}
    answers |= {letter for letter in by_text if options and answer_matches(reply, options[letters.index(letter)])}
    return next(iter(answers)) if len(answers) == 1 else None


def parse_strict(reply: str, letters: str, options: tuple[str, ...] | None = None) -> str | None:
    """The one option a reply states, by its letter as a standalone token or by its text; None when it states
    none or several (never "the first capital letter anywhere"). Reasoning (``<think>...</think>``) is removed
    first, and a reply cut off inside it is unparsed; an option named only to be rejected does not count when
    others are named ("The answer is C, not B." is C)."""
    text = strip_reasoning(reply)
    return None if text is None else _answered(text, letters, options)


def parse_lenient(reply: str, letters: str, options: tuple[str, ...] | None = None) -> str | None:
    """A forgiving reading, reported apart: the strict reading when there is one, else an "answer is X" phrase,
    else the first standalone letter, else a reply that is one lowercase letter, else the first option text
    stated. Reasoning is removed first, as for strict parsing."""
    text = strip_reasoning(reply)
    if text is None:
        return None
    strict = _answered(text, letters, options)
    if strict is not None:
        return strict
    m = _ANSWER_IS.search(text)
    if m and m.group(1).upper() in letters:
        return m.group(1).upper()
    tokens = _letter_tokens(text, letters)
    if tokens:
        return tokens[0]
    bare = text.strip().strip(".()[]:").upper()
    if len(bare) == 1 and bare in letters:
        return bare
    texts = _option_texts(text, options, letters)
    return texts[0] if texts else None


# --- metrics -------------------------------------------------------------------------------------------------


class Accuracy(BaseModel):
    """Accuracy over scored items with its seeded percentile-bootstrap interval; unparsed replies count wrong."""

    n: int
    correct: int
    accuracy: float | None
    ci_low: float | None
    ci_high: float | None
    unparsed: int = 0


def bootstrap_interval(
    values: list[float], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float | None, float | None]:
    """The percentile-bootstrap interval (BOOTSTRAP_LEVEL) of the mean of ``values``, seeded; None for none."""
    if not values:
        return None, None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data), size=(resamples, len(data)))].mean(axis=1)
    tail = (1 - BOOTSTRAP_LEVEL) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def accuracy(scores: list[float], unparsed: int = 0) -> Accuracy:
    low, high = bootstrap_interval(scores)
    correct = int(sum(scores))
    return Accuracy(
        n=len(scores),
        correct=correct,
        accuracy=correct / len(scores) if scores else None,
        ci_low=low,
        ci_high=high,
        unparsed=unparsed,
    )


# --- clustered metrics ---------------------------------------------------------------------------------------
# Several questions of a benchmark often share one video: their answers are not independent, so an interval that
# treats them as independent is too narrow. These resample, and compute the variance over, clusters (videos).


class ClusteredAccuracy(Accuracy):
    """Accuracy with a cluster-bootstrap interval (``ci_low``/``ci_high``: videos resampled, not questions) and the
    cluster-robust standard error beside the naive one; unparsed replies count wrong."""

    clusters: int = 0
    se_clustered: float | None = None
    se_naive: float | None = None


def _cluster_sums(values: list[float], clusters: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per cluster (in order of first appearance): the sum of the values and their count."""
    if len(values) != len(clusters):
        raise ValueError("one cluster per value")
    index: dict[str, int] = {}
    for cluster in clusters:
        index.setdefault(cluster, len(index))
    sums = np.zeros(len(index))
    counts = np.zeros(len(index))
    for value, cluster in zip(values, clusters, strict=True):
        sums[index[cluster]] += value
        counts[index[cluster]] += 1
    return sums, counts


def clustered_se(values: list[float], clusters: list[str]) -> float | None:
    """The cluster-robust (CR1, Liang and Zeger 1986) standard error of the mean of ``values``.

    With item scores y_i of n items in G clusters g (videos) and their mean ȳ::

        Var(ȳ) = G / (G - 1) · Σ_g ( Σ_{i in g} (y_i - ȳ) )² / n²        SE = √Var(ȳ)

    (Cameron and Miller 2015, "A Practitioner's Guide to Cluster-Robust Inference", Eq. 11 for a regression on a
    constant, with the G/(G-1) small-sample factor.) With one item per cluster (G = n) it is the usual s/√n, s the
    sample standard deviation. None with fewer than two clusters (the variance between clusters is unknown).
    """
    sums, counts = _cluster_sums(values, clusters)
    n, g = float(counts.sum()), len(sums)
    if g < 2:
        return None
    mean = sums.sum() / n
    residuals = sums - counts * mean
    return float(np.sqrt(g / (g - 1) * float((residuals**2).sum()) / n**2))


def cluster_bootstrap_interval(
    values: list[float], clusters: list[str], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float | None, float | None]:
    """The percentile-bootstrap interval (BOOTSTRAP_LEVEL) of the mean of ``values``, resampling whole clusters with
    replacement (each resample's mean: its items' total over its item count), seeded. With one item per cluster, in
    order, it draws exactly what :func:`bootstrap_interval` draws. None with fewer than two clusters: resampling one
    cluster only ever gives back its own mean, an interval of width 0 that would claim a certainty it has not."""
    sums, counts = _cluster_sums(values, clusters)
    if len(sums) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(sums), size=(resamples, len(sums)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1 - BOOTSTRAP_LEVEL) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def clustered_accuracy(scores: list[float], clusters: list[str], unparsed: int = 0) -> ClusteredAccuracy:
    """Accuracy of ``scores`` (1 right, 0 wrong or unparsed) whose items belong to ``clusters`` (one per score)."""
    low, high = cluster_bootstrap_interval(scores, clusters)
    correct = int(sum(scores))
    n = len(scores)
    naive = None
    if n >= 2:
        naive = float(np.std(np.asarray(scores, dtype=float), ddof=1) / np.sqrt(n))
    return ClusteredAccuracy(
        n=n,
        correct=correct,
        accuracy=correct / n if n else None,
        ci_low=low,
        ci_high=high,
        unparsed=unparsed,
        clusters=len(set(clusters)),
        se_clustered=clustered_se(scores, clusters) if n else None,
        se_naive=naive,
    )
