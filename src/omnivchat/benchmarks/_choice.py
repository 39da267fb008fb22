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
from omnivchat.scoring.statistics import bootstrap_interval, cluster_bootstrap_interval, clustered_se

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


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
# treats them as independent is too narrow. These resample, and compute the variance over, clusters (videos), with
# the estimators of omnivchat.scoring.statistics.


class ClusteredAccuracy(Accuracy):
    """Accuracy with a cluster-bootstrap interval (``ci_low``/``ci_high``: videos resampled, not questions) and the
    cluster-robust standard error beside the naive one; unparsed replies count wrong."""

    clusters: int = 0
    se_clustered: float | None = None
    se_naive: float | None = None


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
