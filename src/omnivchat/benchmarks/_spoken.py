"""Spoken replies of a run of any benchmark: transcribing them into the run's store, and what scoring needs of them
(each reply's transcript, and the ASR error band put beside the accuracy).

The harness note, section 3 ("Scoring Speech Is Its Own Problem"): a model that answers in speech must be
transcribed before it is scored, and the ASR makes its own mistakes, hardest on names and numbers. So:

- a spoken reply is scored from its ASR transcript only, never from the transcript a server sent with its audio
  (kept apart in the store, shown, never scored);
- a spoken reply without a transcript is "not transcribed": counted, unscored, the run incomplete; never wrong;
- the ASR error band is reported beside the accuracy and never subtracted from it. Its definition is the one of
  :func:`omnivchat.scoring.spoken.score_spoken`: with word error rate w, an item whose reference has k words can
  have its verdict flipped by a transcription error with probability 1 - (1 - w)^k; the band is the mean of that
  risk over the scored spoken items (a multiple-choice letter is one word). It reads: this share of the items
  could be scored otherwise by a perfect transcript, so a gap smaller than it may be transcription noise.
- w is the ASR's own WER measured on clips rendered by omnivchat's TTS from sentences whose words are known
  (``RUN/asr-wer.json``, written by ``omnivchat transcribe``), unless a figure is given (``--asr-wer``); the
  scores say which.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from omnivchat._files import read_model
from omnivchat._progress import progress_bar
from omnivchat.asr import WER_FILE, Asr, AsrWerFile, asr_id, asr_label, transcribe_file
from omnivchat.benchmarks._options import OptionsModel
from omnivchat.benchmarks._registry import read_run_manifest
from omnivchat.errors import OmnivchatError
from omnivchat.judges import ItemResult
from omnivchat.media import MediaError
from omnivchat.runs import STORE_FILE, RunError, RunStore, writes_run_dir
from omnivchat.scoring.spoken import score_spoken

SPOKEN_METRIC = "spoken (ASR band beside the accuracy, never subtracted)"
NOT_TRANSCRIBED = "not transcribed"


class SpokenError(OmnivchatError):
    """A spoken run that cannot be scored as asked (an unknown ASR id, several ASRs and none chosen)."""


@dataclass(frozen=True)
class SpokenReply:
    """A stored reply that has audio: its item, the store kind, the result key, the audio record, its language."""

    item_id: str
    kind: str
    key: str
    audio: dict[str, Any]
    language: str


def spoken_replies(store: RunStore) -> list[SpokenReply]:
    """Every completed item of the store whose reply has audio, any kind (task) of item."""
    found = []
    for kind in store.item_counts():
        for row in store.items(kind):
            if row["status"] != "done" or not row["key"]:
                continue
            audio = store.audio(row["key"])
            if audio is not None:
                language = str((row["meta"] or {}).get("language") or "en")
                found.append(SpokenReply(row["item_id"], kind, row["key"], audio, language))
    return found


@dataclass
class TranscribeSummary:
    """What one transcription pass did, counted per spoken reply."""

    run_dir: Path
    asr_id: str
    asr_label: str
    replies: int = 0
    reused: int = 0
    transcribed: int = 0
    failed: int = 0
    unsupported: Counter[str] = field(default_factory=Counter)
    """Replies in a language the ASR does not transcribe (by language): they stay not transcribed."""
    first_error: str | None = None

    @property
    def complete(self) -> bool:
        return self.reused + self.transcribed == self.replies


@writes_run_dir("run_dir", "transcribe")
def transcribe_run(run_dir: Path, asr: Asr, *, progress: bool = True) -> TranscribeSummary:
    """Transcribe every spoken reply of ``run_dir`` with ``asr`` into its store, once per audio file and language.

    Resumable: a stored transcript is reused, a failed one tried again. A reply in a language the ASR does not
    transcribe is left alone (it stays not transcribed); a file that cannot be decoded fails that reply alone."""
    run_dir = Path(run_dir)
    path = run_dir / STORE_FILE
    if not path.is_file():
        raise RunError(f"{run_dir}: no run store here (run `omnivchat eval` first)")
    ident = asr_id(asr.description)
    summary = TranscribeSummary(run_dir=run_dir, asr_id=ident, asr_label=asr_label(asr.description))
    with RunStore(path) as store:
        store.add_asr(ident, asr.description)
        replies = spoken_replies(store)
        summary.replies = len(replies)
        pending: dict[tuple[str, str], list[SpokenReply]] = {}
        for reply in replies:
            if reply.language not in asr.languages:
                summary.unsupported[reply.language] += 1
                continue
            stored = store.transcript(reply.audio["sha256"], ident, reply.language)
            if stored is not None and stored["text"] is not None:
                summary.reused += 1
            else:
                pending.setdefault((reply.audio["sha256"], reply.language), []).append(reply)
        with progress_bar(disable=not progress) as bar:
            task = bar.add_task(f"transcribing ({summary.asr_label})", total=len(pending))
            for (sha, language), group in pending.items():
                text, error = _transcribe(asr, run_dir / group[0].audio["path"], language)
                store.set_transcript(sha, ident, language, text, error)
                if text is None:
                    summary.failed += len(group)
                    summary.first_error = summary.first_error or f"{group[0].item_id}: {error}"
                else:
                    summary.transcribed += len(group)
                bar.advance(task)
    return summary


def _transcribe(asr: Asr, path: Path, language: str) -> tuple[str | None, str | None]:
    if not path.is_file():
        return None, f"{path}: the reply's audio file is missing"
    try:
        return transcribe_file(asr, path, language), None
    except MediaError as err:
        return None, str(err)


class SpokenScoreOptions(OptionsModel):
    """The scoring options of a benchmark that scores spoken replies (byo, hf): ``score --asr``, ``--asr-wer``."""

    asr: str | None = Field(
        default=None, description="The ASR whose transcripts are scored (its id; None: the only one)."
    )
    asr_wer: float | None = Field(
        default=None, ge=0, description="The ASR's WER for the band (None: the measured one)."
    )


@dataclass
class SpokenScoring:
    """What scoring a run's spoken replies needs: the ASR whose transcripts count, the WER for the band and where
    it came from, and the items scored so far (for the band)."""

    store: RunStore
    spoken: bool
    asr: str | None
    label: str
    wer: float | None
    wer_source: str
    replies: int = 0
    missing: int = 0
    risks: list[float] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)

    @classmethod
    def open(cls, run_dir: Path, store: RunStore, options: SpokenScoreOptions) -> SpokenScoring:
        """Read the run's ASRs and measured WER (RUN/asr-wer.json); choose the ASR: ``options.asr`` (an id or
        its first characters), else the one the WER was measured for, else the only one."""
        run_dir = Path(run_dir)
        spoken = bool(read_run_manifest(run_dir).value("reply_audio"))
        asrs = store.asrs()
        wer_path = run_dir / WER_FILE
        measured = read_model(wer_path, AsrWerFile, "ASR WER file") if wer_path.is_file() else None
        chosen = _choose_asr(asrs, options.asr, measured.asr_id if measured else None, run_dir)
        described = asrs.get(chosen or "") or (measured.asr if measured and measured.asr_id == chosen else None)
        label = f"{asr_label(described)} (id {(chosen or '')[:12]})" if described else "none"
        wer: float | None = None
        if options.asr_wer is not None:
            wer, source = options.asr_wer, "given (--asr-wer)"
        elif measured is not None and chosen == measured.asr_id and measured.overall.wer is not None:
            figure = measured.overall
            wer = figure.wer
            interval = "no interval"
            if figure.low is not None and figure.high is not None:
                interval = f"95% CI {figure.low:.3f}-{figure.high:.3f}"
            source = f"measured ({wer_path}: {figure.sentences} sentences spoken by omnivchat's TTS, {interval})"
        else:
            source = "unknown: no WER measured for this ASR (run `omnivchat transcribe`, or pass --asr-wer)"
        return cls(store=store, spoken=spoken, asr=chosen, label=label, wer=wer, wer_source=source)

    def text(self, key: str, reply: str, language: str = "en") -> tuple[str | None, dict[str, Any]]:
        """The text to score for result ``key``: ``reply`` itself for a text reply; a spoken reply's ASR
        transcript, or None when it has none (not transcribed). With what to keep in the item's detail."""
        audio = self.store.audio(key)
        if audio is None:
            return reply, {}
        self.replies += 1
        detail: dict[str, Any] = {
            "spoken": True,
            "audio": audio["path"],
            "server_transcript (not scored)": audio["server_transcript"],
        }
        stored = self.store.transcript(audio["sha256"], self.asr, language) if self.asr else None
        if stored is None or stored["text"] is None:
            self.missing += 1
            why = f" (transcription failed: {stored['error']})" if stored and stored["error"] else ""
            detail["transcript"] = None
            detail["reason"] = NOT_TRANSCRIBED + why
            return None, detail
        detail["transcript"] = stored["text"]
        return stored["text"], detail

    def unscored(self, key: str, task: str, group: str | None, heard: dict[str, Any]) -> ItemResult:
        """The result of a spoken reply with no transcript: no score, the reason, never wrong."""
        detail = dict(heard)
        reason = str(detail.pop("reason", NOT_TRANSCRIBED))
        return ItemResult(key=key, task=task, score=None, reason=reason, group=group, detail=detail)

    def scored(self, result: ItemResult, transcript: str, heard: dict[str, Any], reference: str | None) -> ItemResult:
        """``result`` (scored from ``transcript``) with ``heard`` in its detail, counted for the band: its risk
        is that of ``reference``, the answer it was matched against (None: a multiple-choice letter, one word)."""
        self.scores.append(result.score or 0.0)
        if self.wer is not None:
            if reference is None:
                self.risks.append(min(self.wer, 1.0))
            else:
                band = score_spoken([transcript], [reference], self.wer).band
                self.risks.append(band if band is not None else 0.0)
        return result.model_copy(update={"detail": {**result.detail, **heard}})

    def metrics(self) -> dict[str, Any] | None:
        """The spoken block of the metrics (None for a run with no spoken reply): the counts, the ASR, the WER
        and its source, the band and the accuracy of the scored spoken items with the band around it."""
        if not self.spoken and not self.replies:
            return None
        accuracy = sum(self.scores) / len(self.scores) if self.scores else None
        band = sum(self.risks) / len(self.risks) if self.risks and self.wer is not None else None
        return {
            "replies": self.replies,
            "transcribed": self.replies - self.missing,
            NOT_TRANSCRIBED: self.missing,
            "asr": self.label,
            "wer": self.wer,
            "wer_source": self.wer_source,
            "accuracy": accuracy,
            "band": band,
            "band_low": None if band is None or accuracy is None else max(0.0, accuracy - band),
            "band_high": None if band is None or accuracy is None else min(1.0, accuracy + band),
        }


def _choose_asr(asrs: dict[str, dict[str, Any]], given: str | None, measured: str | None, run_dir: Path) -> str | None:
    listed = ", ".join(f"{k[:12]} ({asr_label(v)})" for k, v in asrs.items()) or "none"
    if given:
        matching = [k for k in asrs if k.startswith(given)]
        if len(matching) != 1:
            raise SpokenError(f"{run_dir}: --asr {given} names {len(matching)} of its ASRs (transcribed by: {listed})")
        return matching[0]
    if measured is not None and (measured in asrs or not asrs):
        return measured
    if len(asrs) > 1:
        raise SpokenError(f"{run_dir}: transcribed by several ASRs ({listed}); choose one with --asr ID")
    return next(iter(asrs), None)
