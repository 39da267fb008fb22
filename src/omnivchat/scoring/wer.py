"""Word error rate: how often an ASR gets the words of known sentences wrong, with a bootstrap interval.

Definition (the standard one, as NIST's sclite counts it): align the hypothesis to the reference word by word with
the fewest substitutions S, deletions D and insertions I (a word-level Levenshtein alignment); a corpus's WER is
(S + D + I) / N summed over its sentences, N the number of reference words. It can exceed 1 (insertions).

Words are the spoken-answer matcher's tokens (:func:`omnivchat.scoring.spoken.tokenize`): case and punctuation
folded, number words as digits ("twenty-three" and "23" are one word, equal), fillers and articles dropped, each
Chinese character one word (a character error rate, as Chinese is scored). So the WER is that of the words the
matcher reads, which is the rate the ASR error band of :func:`omnivchat.scoring.spoken.score_spoken` needs.

Interval: a seeded percentile bootstrap over sentences (a sentence is the unit drawn, so errors that come together
in one clip stay together).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from omnivchat.scoring.spoken import tokenize
from omnivchat.scoring.statistics import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, ratio_bootstrap_interval

__all__ = ["WerEstimate", "WordErrors", "corpus_wer", "word_errors"]


@dataclass(frozen=True)
class WordErrors:
    """The alignment counts of one sentence: substitutions, deletions, insertions, and its reference words."""

    substitutions: int
    deletions: int
    insertions: int
    words: int

    @property
    def errors(self) -> int:
        return self.substitutions + self.deletions + self.insertions


def align(reference: Sequence[str], hypothesis: Sequence[str]) -> WordErrors:
    """The fewest-edits alignment of two token lists (ties: substitutions before deletions before insertions)."""
    # cost[j] holds (edits, substitutions, deletions, insertions) for reference[:i] against hypothesis[:j].
    previous = [(j, 0, 0, j) for j in range(len(hypothesis) + 1)]
    for i, ref in enumerate(reference, start=1):
        current = [(i, 0, i, 0)]
        for j, hyp in enumerate(hypothesis, start=1):
            e, s, d, n = previous[j - 1]
            diagonal = (e, s, d, n) if ref == hyp else (e + 1, s + 1, d, n)
            e, s, d, n = previous[j]
            deletion = (e + 1, s, d + 1, n)
            e, s, d, n = current[j - 1]
            insertion = (e + 1, s, d, n + 1)
            current.append(min((diagonal, deletion, insertion), key=lambda step: step[0]))  # first of the fewest
        previous = current
    _edits, s, d, n = previous[-1]
    return WordErrors(substitutions=s, deletions=d, insertions=n, words=len(reference))


def word_errors(reference: str, hypothesis: str) -> WordErrors:
    """The word errors of ``hypothesis`` (what an ASR heard) against ``reference`` (what was said), on the
    matcher's tokens (see the module docstring)."""
    return align(tokenize(reference), tokenize(hypothesis))


@dataclass(frozen=True)
class WerEstimate:
    """A corpus WER with its bootstrap interval (None where there are no reference words)."""

    wer: float | None
    low: float | None
    high: float | None
    sentences: int
    words: int
    errors: int
    substitutions: int
    deletions: int
    insertions: int


def corpus_wer(
    counts: Sequence[WordErrors], *, seed: int = BOOTSTRAP_SEED, resamples: int = BOOTSTRAP_RESAMPLES
) -> WerEstimate:
    """(S + D + I) / N over ``counts`` (one per sentence), with its seeded percentile-bootstrap interval at
    BOOTSTRAP_LEVEL (:func:`omnivchat.scoring.statistics.ratio_bootstrap_interval`): ``resamples`` draws of as
    many sentences, with replacement; a draw with no reference word is left out of the interval."""
    words = np.array([c.words for c in counts], dtype=np.int64)
    errors = np.array([c.errors for c in counts], dtype=np.int64)
    total_words, total_errors = int(words.sum()), int(errors.sum())
    wer = total_errors / total_words if total_words else None
    low, high = ratio_bootstrap_interval(errors, words, seed=seed, resamples=resamples)
    return WerEstimate(
        wer=wer,
        low=low,
        high=high,
        sentences=len(counts),
        words=total_words,
        errors=total_errors,
        substitutions=sum(c.substitutions for c in counts),
        deletions=sum(c.deletions for c in counts),
        insertions=sum(c.insertions for c in counts),
    )
