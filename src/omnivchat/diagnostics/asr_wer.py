"""The ASR's own word error rate, measured on speech whose words are known: sentences spoken by omnivchat's TTS
(espeak-ng, as the Studio renderer and the simulated models speak), transcribed, compared word by word.

The harness note, section 3: the ASR contaminates the numbers, and hardest on names and numbers, which is what
benchmark answers are made of. So the sentences here are answer-like: numbers said as words and written as
digits, times, money, dates, names, colours, sides, negations. English always; Chinese when the ASR transcribes it.
The clips take the path a spoken reply takes (a WAV file, decoded to 16 kHz by :mod:`omnivchat.media`), and the
words are compared as the spoken-answer matcher reads them (:mod:`omnivchat.scoring.wer`).

What this measures is the ASR on this TTS's voices, not on a model's own voice (espeak-ng is robotic; a natural
voice may well be easier, which was not measured here). It is the rate the ASR error band uses unless one is given
(``omnivchat score --asr-wer``).

``speak_wav`` is also how a simulated model answers aloud (``routes.SimRoute(speaker=speak_wav)``).
"""

from __future__ import annotations

import io
import tempfile
import wave
from pathlib import Path

import numpy as np

from omnivchat._progress import progress_bar
from omnivchat.asr import Asr, AsrWerFile, SentenceResult, WerFigure, asr_id, transcribe_file
from omnivchat.media import MediaError
from omnivchat.scoring.statistics import BOOTSTRAP_LEVEL, BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED
from omnivchat.scoring.wer import WordErrors, corpus_wer, word_errors

TTS_RATE = 22050
"""espeak-ng's own rate: the speech is written as it is made, never resampled before the decoder."""
DEFAULT_VOICES: dict[str, str] = {"en": "en-us", "zh": "cmn"}
"""The espeak-ng voice of each language when none is named (``--reply-audio auto`` for a simulated model)."""
VOICES: dict[str, tuple[str, ...]] = {"en": ("en-us", "en-us+f2", "en+m3"), "zh": ("cmn", "cmn+f2")}
"""The voices the sentences of each language are spoken in, in turn."""

SENTENCES: dict[str, tuple[str, ...]] = {
    "en": (
        "The answer is twenty-three.",
        "There are 17 red apples on the table.",
        "The square is on the left.",
        "No, it is not Paris. It is London.",
        "The train leaves at 7:45 in the morning.",
        "It costs five dollars and fifty cents.",
        "She said the meeting is on May the third.",
        "The blue bottle is behind the laptop.",
        "I counted three people near the door.",
        "The man in the green jacket is waving.",
        "Turn right after the second traffic light.",
        "The price went up by 12 percent.",
        "He was born in nineteen eighty-four.",
        "The door on your right is open.",
        "Maria is holding a yellow umbrella.",
        "There is nobody in the kitchen.",
        "The clock on the wall shows half past nine.",
        "We need 250 grams of flour.",
        "The cat jumped onto the red chair.",
        "Yes, the light is still on.",
        "The score was four to two.",
        "David put the keys in the top drawer.",
        "The room number is 314.",
        "It is about forty kilometers from here.",
        "The orange cup is smaller than the white one.",
        "Nothing was written on the board.",
        "The bus comes every fifteen minutes.",
        "Anna is standing between the two windows.",
        "The package weighs 3.5 kilograms.",
        "It happened on the 21st of June.",
        "The phone is under the newspaper.",
        "There were eight candles on the cake.",
        "Tom drove to Chicago on Tuesday.",
        "The green light means you can cross.",
        "I think the answer is purple.",
        "The ticket costs 30 euros.",
        "The dog is sleeping next to the sofa.",
        "Only two of the five glasses are full.",
        "Peter lives on the ninth floor.",
        "The film starts at a quarter to eight.",
    ),
    "zh": (
        "答案是二十三。",
        "桌子上有十七个红苹果。",
        "方块在左边。",
        "不是巴黎，是伦敦。",
        "火车早上七点四十五分出发。",
        "这个要五块五。",
        "蓝色的瓶子在电脑后面。",
        "门口有三个人。",
        "右边的门是开着的。",
        "她拿着一把黄色的雨伞。",
        "房间号是三百一十四。",
        "厨房里没有人。",
    ),
}


def speak_wav(text: str, voice: str, language: str = "en") -> bytes:
    """``text`` spoken by espeak-ng as a 16-bit mono WAV at TTS_RATE; ``voice`` an espeak-ng voice name (``en-us``,
    ``cmn+f2``), or ``auto``/``default`` for the language's own. Raises MediaError for a voice espeak-ng lacks."""
    from omnivchat.synth import speak

    if voice in ("auto", "default"):
        voice = DEFAULT_VOICES.get(language[:2], DEFAULT_VOICES["en"])
    utterance = speak(text, voice=voice, sr=TTS_RATE)
    pcm = (np.clip(utterance.samples, -1.0, 1.0) * 32767).astype("<i2").tobytes()
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(TTS_RATE)
        out.writeframes(pcm)
    return buffer.getvalue()


def measure_wer(
    asr: Asr,
    *,
    per_language: int | None = None,
    languages: tuple[str, ...] | None = None,
    progress: bool = True,
) -> AsrWerFile:
    """The WER of ``asr`` on the built-in sentences (the first ``per_language`` of each language it transcribes,
    or of ``languages``), each spoken by espeak-ng in its language's voices in turn, with a bootstrap interval.

    A clip the ASR cannot read is recorded with its error and left out of the rate (it is not a word error)."""
    chosen = [lang for lang in (languages or tuple(SENTENCES)) if lang in asr.languages and lang in SENTENCES]
    if not chosen:
        raise ValueError(f"the ASR transcribes {', '.join(asr.languages)}; no built-in sentences in those")
    work = [
        (lang, VOICES[lang][i % len(VOICES[lang])], text)
        for lang in chosen
        for i, text in enumerate(SENTENCES[lang][:per_language] if per_language else SENTENCES[lang])
    ]
    results: list[SentenceResult] = []
    counts: dict[str, list[WordErrors]] = {lang: [] for lang in chosen}
    with (
        tempfile.TemporaryDirectory(prefix="omnivchat-asr-") as tmp,
        progress_bar(disable=not progress) as bar,
    ):
        task = bar.add_task("measuring the ASR's WER", total=len(work))
        for n, (lang, voice, text) in enumerate(work):
            clip = Path(tmp) / f"{n}.wav"
            clip.write_bytes(speak_wav(text, voice, lang))
            try:
                heard: str | None = transcribe_file(asr, clip, lang)
                error = None
            except MediaError as err:
                heard, error = None, str(err)
            words = errors = 0
            if heard is not None:
                found = word_errors(text, heard)
                counts[lang].append(found)
                words, errors = found.words, found.errors
            results.append(
                SentenceResult(
                    language=lang, voice=voice, text=text, transcript=heard, error=error, words=words, errors=errors
                )
            )
            bar.advance(task)
    return AsrWerFile(
        asr_id=asr_id(asr.description),
        asr=asr.description,
        tts={
            "engine": "espeak-ng (omnivchat.synth.speak, 160 words per minute)",
            "sample_rate": TTS_RATE,
            "voices": {lang: list(VOICES[lang]) for lang in chosen},
        },
        overall=_figure(corpus_wer([c for lang in chosen for c in counts[lang]])),
        languages={lang: _figure(corpus_wer(counts[lang])) for lang in chosen},
        bootstrap={
            "unit": "sentence",
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
            "level": BOOTSTRAP_LEVEL,
        },
        sentences=results,
    )


def _figure(estimate: object) -> WerFigure:
    return WerFigure.model_validate(estimate, from_attributes=True)
