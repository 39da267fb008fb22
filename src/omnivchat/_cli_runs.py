"""CLI commands for runs: `eval`, `runs show`, `export`."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

console = Console(width=None if sys.stdout.isatty() else 140, emoji=False)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 140, emoji=False)
runs_app = typer.Typer(help="Inspect run directories.", no_args_is_help=True)


class Thinking(StrEnum):
    on = "on"
    off = "off"
    default = "default"


class MediaInput(StrEnum):
    video_url = "video_url"
    file = "file"
    frames = "frames"
    none = "none"


class AudioDelivery(StrEnum):
    in_video = "in_video"
    input_audio = "input_audio"
    none = "none"


def _fail(message: str) -> typer.Exit:
    # One line however long (soft_wrap): scripts and people read the file name whole.
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code=2)


def print_failures(counts: dict[str, int], first: dict[str, str], *, title: str = "failed items by kind") -> None:
    """Failures grouped by kind, most frequent first, each with its first message: nobody should have to open
    the store to learn that every clip failed to decode."""
    if not counts:
        return
    console.print(f"[red]{title}:[/]")
    for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        message = first.get(kind, "")
        if len(message) > 300:
            message = message[:299] + "…"
        console.print(f"  {kind}: {n}" + (f" (first: {message})" if message else ""), markup=False, highlight=False)


def route_overrides(
    base_url: str | None,
    thinking: Thinking | None,
    media_input_type: MediaInput | None,
    omit_modalities: bool | None,
    audio_delivery: AudioDelivery | None,
) -> dict[str, object]:
    """CLI flags as RouteSettings overrides (None: not given)."""
    from omnivchat.routes import PROVIDER_DEFAULT

    thinking_value = (
        None if thinking is None else {"on": True, "off": False, "default": PROVIDER_DEFAULT}[thinking.value]
    )
    return {
        "base_url": base_url,
        "thinking": thinking_value,
        "media_input": media_input_type.value if media_input_type else None,
        "include_modalities": None if omit_modalities is None else not omit_modalities,
        "audio_delivery": audio_delivery.value if audio_delivery else None,
    }


def eval_command(
    bench: Annotated[Path, typer.Option("--bench", help="Bench directory to run.")],
    model: Annotated[
        str,
        typer.Option("--model", help="Model id, e.g. qwen3-omni-flash, Qwen/Qwen3-Omni-30B-A3B-Instruct, sim:healthy."),
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Run directory (created, or resumed when identical).")],
    base_url: Annotated[str | None, typer.Option("--base-url", help="OpenAI-compatible server URL up to /v1.")] = None,
    key_file: Annotated[Path | None, typer.Option("--key-file", help="dotenv-style file of NAME=value lines.")] = None,
    key_field: Annotated[
        str | None, typer.Option("--key-field", help="Which NAME in --key-file holds the key.")
    ] = None,
    system_prompt: Annotated[
        Path | None, typer.Option("--system-prompt", help="System prompt file (default: ours).")
    ] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", min=1, help="Requests in flight at most.")] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Only the first N instances (smoke runs).")
    ] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1, help="max_tokens per reply.")] = None,
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = None,
    top_p: Annotated[float | None, typer.Option("--top-p", help="Nucleus sampling top_p.")] = None,
    thinking: Annotated[
        Thinking | None, typer.Option("--thinking", help="enable_thinking on/off, or the provider default.")
    ] = None,
    media_input_type: Annotated[
        MediaInput | None, typer.Option("--media-input-type", help="How clips are sent.")
    ] = None,
    omit_modalities: Annotated[
        bool | None, typer.Option("--omit-modalities/--no-omit-modalities", help='Leave out modalities=["text"].')
    ] = None,
    audio_delivery: Annotated[
        AudioDelivery | None, typer.Option("--audio-delivery", help="How the audio track reaches the model.")
    ] = None,
    defaults: Annotated[
        Path | None, typer.Option("--defaults", help="User file of per-model defaults (YAML/JSON/TOML).")
    ] = None,
    max_attempts: Annotated[
        int, typer.Option("--max-attempts", min=1, help="Attempts per request, retries included.")
    ] = 4,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
) -> None:
    """Run a model on a bench into a resumable, auditable run directory.

    Running the same command again resumes: completed replies are reused, failed items retried, and every earlier
    attempt kept. A run directory made with other inputs (bench, clips, prompt, model settings) is refused; one
    made by another omnivchat version resumes, with a warning (request hashes cover what is sent).
    """
    from omnivchat.bench import BenchError, load_bench
    from omnivchat.prompts import load_prompt
    from omnivchat.routes import CredentialError, Sampling, SettingsError, get_route
    from omnivchat.routes._openai import ConfigError
    from omnivchat._files import check_output_dir
    from omnivchat.runs import MANIFEST_FILE, ManifestMismatch, RetryPolicy, run_eval

    check_output_dir(output, ours=lambda d: (d / MANIFEST_FILE).is_file(), kind="a run directory")
    try:
        loaded = load_bench(bench)
        prompt, label = load_prompt(system_prompt)
        overrides = route_overrides(base_url, thinking, media_input_type, omit_modalities, audio_delivery)
        route = get_route(model, key_file=key_file, key_field=key_field, defaults_file=defaults, **overrides)
        from omnivchat._cli_diagnostics import warn_unchecked

        warn_unchecked(route)
        sampling = Sampling(temperature=temperature, top_p=top_p, max_tokens=max_tokens)
        summary = run_eval(
            loaded,
            route,
            output,
            system_prompt=prompt,
            system_prompt_label=label,
            sampling=sampling,
            concurrency=concurrency,
            limit=limit,
            retry=RetryPolicy(max_attempts=max_attempts),
            progress=progress,
        )
    except (
        BenchError,
        CredentialError,
        SettingsError,
        ConfigError,
        ManifestMismatch,
        FileNotFoundError,
        ValueError,
    ) as err:
        raise _fail(str(err)) from None
    for note in summary.notes:
        err_console.print(f"[yellow]warning:[/] {note}", highlight=False)
    verb = "resumed" if summary.resumed else "ran"
    console.print(
        f"{verb} {summary.total} items in {summary.elapsed_s:.1f} s: {summary.done} done "
        f"({summary.reused} reused), {summary.failed} failed, {summary.attempts} requests sent"
    )
    print_failures(summary.failures, summary.first_errors)
    if route.settings.route == "sim":
        console.print("[yellow]simulated model: this run checks the harness, it says nothing about a real model[/]")
    console.print(f"wrote {output / 'manifest.json'} and {output / 'store.sqlite'}")
    if not summary.complete:
        raise typer.Exit(code=1)


@runs_app.command("show")
def show_command(run_dir: Annotated[Path, typer.Argument(help="Run directory.")]) -> None:
    """Counts by status and failure kind, attempts, tokens and cost fields when the server reported them."""
    from omnivchat.runs import RunError, run_status

    try:
        status = run_status(run_dir)
    except RunError as err:
        raise _fail(str(err)) from None
    label = " [yellow](simulated)[/]" if status["simulated"] else ""
    where = f"{status['model']} via {status['route']}{label} on {status['bench']}"
    console.print(f"{run_dir}: {where}, condition {status['condition']}")
    table = Table(title="Items", title_justify="left")
    for column in ("instances", "done", "failed", "not run"):
        table.add_column(column, justify="right")
    table.add_row(*(str(status[k]) for k in ("instances", "done", "failed", "not_run")))
    console.print(table)
    for title, key in (
        ("Failed items by kind", "failure_kinds"),
        ("Attempts", "attempts"),
        ("Failed attempts by kind", "attempt_failures"),
        ("Tokens", "tokens"),
    ):
        if status[key]:
            console.print(f"{title}: " + ", ".join(f"{k} {v}" for k, v in sorted(status[key].items())))


def export_command(
    run_dir: Annotated[Path, typer.Argument(help="Run directory.")],
    output: Annotated[Path, typer.Option("--output", "-o", help="JSON file to write.")],
    allow_incomplete: Annotated[
        bool, typer.Option("--allow-incomplete", help="Export a run that has failed or missing items.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite the --output file if it exists.")] = False,
) -> None:
    """Write per-item replies and metadata as JSON, without credentials or endpoint addresses."""
    from omnivchat._files import check_output_file, write_text_atomic
    from omnivchat.runs import RunError, export_run

    check_output_file(output, force=force)
    try:
        data = export_run(run_dir, allow_incomplete=allow_incomplete)
    except RunError as err:
        raise _fail(str(err)) from None
    write_text_atomic(output, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    console.print(f"wrote {output} ({len(data['records'])} records, status {data['status']})")
