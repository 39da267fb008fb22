"""Word error rate: the word-level alignment (checked against jiwer, a well-kept WER library), the matcher's
normalisation of words, and the corpus rate with its seeded bootstrap interval."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.scoring.spoken import tokenize
from omnivchat.scoring.wer import WordErrors, align, corpus_wer, word_errors


@pytest.mark.parametrize(
    ("reference", "heard", "counts"),
    [
        ("The answer is twenty-three.", "The answer is 23.", (0, 0, 0, 3)),  # "the" dropped, 23 == twenty-three
        ("The train leaves at 7:45.", "The train leave at 745.", (2, 1, 0, 5)),  # train leaves at 7 45 / 745
        ("Peter lives on the ninth floor.", "Be to live on the nice floor.", (3, 0, 1, 5)),
        ("red", "", (0, 1, 0, 1)),
        ("答案是二十三。", "答案是23", (0, 0, 0, 4)),  # Chinese: one word a character, numbers read
        ("It is red.", "Uh, it's red.", (0, 0, 0, 3)),  # fillers and contractions folded
    ],
)
def test_word_errors_on_the_matchers_words(reference: str, heard: str, counts: tuple[int, int, int, int]) -> None:
    found = word_errors(reference, heard)
    assert (found.substitutions, found.deletions, found.insertions, found.words) == counts


words = st.lists(st.sampled_from(["red", "blue", "one", "two", "cat", "left"]), max_size=8)


@given(words, words)
def test_the_alignment_agrees_with_jiwer(reference: list[str], hypothesis: list[str]) -> None:
    jiwer = pytest.importorskip("jiwer")
    found = align(reference, hypothesis)
    assert found.errors == found.substitutions + found.deletions + found.insertions
    if reference:
        theirs = jiwer.process_words(" ".join(reference), " ".join(hypothesis) or "")
        assert found.errors == theirs.substitutions + theirs.deletions + theirs.insertions
        assert math.isclose(found.errors / len(reference), theirs.wer)
    else:
        assert found == WordErrors(0, 0, len(hypothesis), 0)


def test_corpus_wer_pools_words_and_bootstraps_sentences() -> None:
    counts = [word_errors("one two three four", "one two three four"), word_errors("red cat", "blue dog")]
    estimate = corpus_wer(counts)
    assert estimate.wer == 2 / 6 and estimate.errors == 2 and estimate.words == 6 and estimate.sentences == 2
    assert estimate.low is not None and estimate.high is not None
    assert 0.0 <= estimate.low <= estimate.wer <= estimate.high <= 1.0
    assert corpus_wer(counts) == estimate  # seeded: the same interval every time
    assert corpus_wer(counts, seed=1).wer == estimate.wer
    empty = corpus_wer([word_errors("", "uh")])
    assert empty.wer is None and empty.low is None and empty.errors == 0 and empty.words == 0


def test_tokens_are_the_matchers() -> None:
    assert tokenize("The answer is twenty-three.") == ["answer", "is", "23"]
