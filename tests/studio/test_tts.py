"""espeak-ng text to speech: the process boundary, determinism, word alignment."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from omnivchat.synth import _tts


def test_espeak_is_never_loaded_in_this_process() -> None:
    _tts.speak("Hello there.", voice="en-us")
    maps = Path(f"/proc/{os.getpid()}/maps")
    if maps.exists():
        assert "espeak" not in maps.read_text()


def test_speech_is_deterministic_whatever_came_before() -> None:
    a = _tts.speak("Which cup is red?", voice="en-us+f3")
    _tts.speak("左边是什么？", voice="cmn")  # espeak-ng keeps state between calls; the worker forks per call
    b = _tts.speak("Which cup is red?", voice="en-us+f3")
    assert np.array_equal(a.samples, b.samples) and a.words == b.words
    _tts.shutdown_worker()
    c = _tts.speak("Which cup is red?", voice="en-us+f3")
    assert np.array_equal(a.samples, c.samples)


def test_rate_and_voice_change_the_sound() -> None:
    slow = _tts.speak("one two three four", voice="en-us", rate=120)
    fast = _tts.speak("one two three four", voice="en-us", rate=240)
    assert slow.duration > 1.5 * fast.duration
    other = _tts.speak("one two three four", voice="en-us+f3", rate=120)
    assert not np.array_equal(slow.samples[: other.samples.size], other.samples[: slow.samples.size])


def test_words_follow_the_text() -> None:
    u = _tts.speak("It's the red one, on the left.", voice="en-us")
    assert [w.text for w in u.words] == ["It's", "the", "red", "one", "on", "the", "left"]
    assert all(0 <= w.start < w.end <= u.duration for w in u.words)


def test_unknown_voice_is_a_media_error() -> None:
    import pytest

    from omnivchat.media import MediaError

    with pytest.raises(MediaError, match="unknown espeak-ng voice"):
        _tts.speak("hi", voice="no-such-voice")
    assert _tts.speak("still works", voice="en-us").duration > 0.3


@given(st.text(alphabet=st.sampled_from(list("ab c,.'-左边红")), max_size=30))
def test_tokens_are_spans_of_the_text(text: str) -> None:
    tokens = _tts.tokenize(text)
    for word, start, end in tokens:
        assert text[start:end] == word and word.strip() == word and word
    assert [s for _, s, _ in tokens] == sorted(s for _, s, _ in tokens)


def test_the_worker_is_a_program_next_to_its_client() -> None:
    """The worker is started by file path, never imported: the script must sit beside ``_tts`` in the package."""
    import sys

    script = _tts._WORKER_SCRIPT
    assert script.is_file() and script.parent == Path(_tts.__file__).parent
    assert "omnivchat.synth._espeak_worker" not in sys.modules
