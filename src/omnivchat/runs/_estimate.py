"""Dry runs (``--dry-run``): what a run would send and what it would cost, estimated, with nothing sent and nothing
written. Requests are built and prepared exactly as a run prepares them (media fitted to the route, so the bytes
are the bytes that would go), then counted: those the store already answered are left out (a resume sends only
the rest). Prompt tokens are estimated from the media durations at the route's token rates, output tokens from
max tokens; see docs/costs.md for the rates and where they come from.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnivchat._blocking import blocking
from omnivchat.media import MediaError
from omnivchat.routes import (
    DEFAULT_OUTPUT_TOKENS,
    ChatRequest,
    Price,
    RequestEstimate,
    Route,
    RouteError,
    StagedRoute,
    TokenRates,
    describe_items,
    estimate_prepared,
    limit_flag,
    media_failure,
    media_items,
    most_items,
    rates_for,
)
from omnivchat.runs._cost import RunCost, money, tally
from omnivchat.runs._files import Manifest
from omnivchat.runs._manifest import write_or_check_manifest
from omnivchat.runs._store import RunStore


@dataclass
class DryRun:
    """What a run would send: requests, media bytes and seconds, estimated tokens and cost (None: no price)."""

    model: str
    items: int = 0
    requests: int = 0
    already_done: int = 0
    not_built: dict[str, int] = field(default_factory=dict)
    """Failure kind -> items whose request cannot be built (a clip that cannot be read): they would fail."""
    first_errors: dict[str, str] = field(default_factory=dict)
    media_bytes: int = 0
    media_seconds: float = 0.0
    text_tokens: int = 0
    audio_tokens: int = 0
    video_tokens: int = 0
    output_tokens: int = 0
    usd: float | None = 0.0
    price: Price | None = None
    rates: TokenRates | None = None
    output_assumed: int = 0
    """Requests with no max tokens, for which :data:`DEFAULT_OUTPUT_TOKENS` output tokens were assumed."""
    spent: RunCost | None = None
    """What the run directory's store has already spent (a resume), or None for a new run."""
    unestimated: str | None = None
    """Why the cost cannot be estimated at all (a cascade's stages), or None."""
    most_media: dict[str, int] | None = None
    """An OpenAI-compatible route's most media items of each modality in one request (answered ones included: a
    server must take every item of the bench), as vLLM counts them; None for other routes."""

    @property
    def prompt_tokens(self) -> int:
        return self.text_tokens + self.audio_tokens + self.video_tokens

    def add(self, estimate: RequestEstimate, *, max_tokens: int | None) -> None:
        self.requests += 1
        self.media_bytes += estimate.media_bytes
        self.media_seconds += estimate.media_seconds
        self.text_tokens += estimate.text_tokens
        self.audio_tokens += estimate.audio_tokens
        self.video_tokens += estimate.video_tokens
        self.output_tokens += estimate.output_tokens
        self.output_assumed += max_tokens is None
        self.usd = None if self.usd is None or estimate.usd is None else self.usd + estimate.usd

    def merge(self, other: DryRun) -> None:
        """Add another sender's dry run (a judging pass: one per judge)."""
        for name in ("items", "requests", "already_done", "media_bytes", "text_tokens", "audio_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("video_tokens", "output_tokens", "output_assumed"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.media_seconds += other.media_seconds
        self.usd = None if self.usd is None or other.usd is None else self.usd + other.usd
        for kind, n in other.not_built.items():
            self.not_built[kind] = self.not_built.get(kind, 0) + n
        for kind, message in other.first_errors.items():
            self.first_errors.setdefault(kind, message)
        if other.most_media is not None:
            self.see_media(other.most_media)

    def see_media(self, counts: dict[str, int]) -> None:
        self.most_media = most_items([self.most_media or {}, counts])

    def lines(self) -> list[str]:
        """The dry run for people: requests, bytes, tokens, cost, and the assumptions behind them."""
        out = [
            f"{self.model}: {self.requests} request(s) to send for {self.items} item(s)"
            + (f" ({self.already_done} already answered in the store)" if self.already_done else "")
            + "; nothing was sent",
            f"media: {self.media_bytes:,} bytes, {self.media_seconds:.1f} s of audio and video",
            f"estimated prompt tokens: {self.prompt_tokens:,} (text {self.text_tokens:,}, audio "
            f"{self.audio_tokens:,}, video {self.video_tokens:,}); output tokens at most {self.output_tokens:,}",
        ]
        if self.output_assumed:
            out.append(
                f"  {self.output_assumed} request(s) set no max tokens: {DEFAULT_OUTPUT_TOKENS} output tokens "
                "assumed for each (set --max-tokens for a bound)"
            )
        if self.rates is not None:
            out.append(f"  token rates: {self.rates.source}")
        if self.unestimated is not None:
            out.append(f"estimated cost: cost unknown ({self.unestimated})")
        elif self.usd is None:
            out.append(
                "estimated cost: cost unknown (no price; set one with --defaults FILE, or a judge's in its judges "
                "file; docs/costs.md)"
            )
        else:
            out.append(
                f"estimated cost: {money(self.usd)} at most (every request once, each reply at max tokens; "
                "retries would add)"
            )
        if self.spent is not None and self.spent.total.attempts:
            out.append(f"already spent by this run: {self.spent.total.describe()}")
        if self.most_media is not None and any(self.most_media.values()):
            out.append(
                f"largest request: {describe_items(self.most_media)} (a vLLM server takes it when started with "
                f"{limit_flag(self.most_media)} or more)"
            )
        for kind, n in sorted(self.not_built.items()):
            out.append(f"  {n} item(s) cannot be built ({kind}), first: {self.first_errors.get(kind, '')}")
        return out


def _dry_run(route: Route, spent: RunCost | None = None) -> DryRun:
    dry = DryRun(model=route.model_id, price=route.settings.price, rates=rates_for(route.settings), spent=spent)
    if route.settings.route == "openai":
        dry.most_media = {}
    if isinstance(route, StagedRoute):  # a cascade: its own requests bill nothing, its stages do
        dry.usd = None
        dry.unestimated = "the stages of a cascade are not estimated: the items are counted, not their stages' tokens"
    return dry


def _store_results(run_dir: Path) -> tuple[RunStore | None, RunCost | None]:
    path = run_dir / "store.sqlite"
    if not path.is_file():
        return None, None
    store = RunStore(path, read_only=True)
    return store, tally(store.cost_rows())


async def estimate_requests(
    route: Route,
    requests: list[ChatRequest],
    *,
    store: RunStore | None = None,
    workers: int = 4,
    dry: DryRun | None = None,
) -> DryRun:
    """Prepare each request on ``workers`` threads and add it to a :class:`DryRun` unless ``store`` answered it
    before. Nothing is sent; the route is not closed (its caller owns it)."""
    dry = dry or _dry_run(route)

    def one(request: ChatRequest) -> tuple[str, RequestEstimate, dict[str, int]] | RouteError:
        try:
            prepared = route.prepare(request)
            items = media_items(prepared.description) if isinstance(prepared.description, dict) else {}
            return prepared.key, estimate_prepared(prepared, route.settings), items
        except RouteError as err:
            return err
        except MediaError as err:
            return media_failure(err)

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        done = await asyncio.get_running_loop().run_in_executor(None, lambda: list(pool.map(one, requests)))
    for request, outcome in zip(requests, done, strict=True):
        dry.items += 1
        if isinstance(outcome, RouteError):
            dry.not_built[outcome.kind] = dry.not_built.get(outcome.kind, 0) + 1
            dry.first_errors.setdefault(outcome.kind, f"{request.item_id}: {outcome}")
        else:
            if dry.most_media is not None:
                dry.see_media(outcome[2])
            if store is not None and store.result(outcome[0]) is not None:  # read here: the store has one thread
                dry.already_done += 1
            else:
                dry.add(outcome[1], max_tokens=request.sampling.max_tokens)
    return dry


async def estimate_tasks_async(
    route: Route,
    run_dir: str | Path,
    manifest: Manifest | dict[str, Any],
    tasks: list[Any],
    *,
    build_workers: int = 4,
) -> DryRun:
    """The dry run of :func:`omnivchat.runs.run_tasks`: the same manifest check (an existing run directory must
    hold this run; a new one is not made), every task's requests built and prepared, counted and estimated.
    Sends nothing, writes nothing, and closes the route."""
    run_dir = Path(run_dir)
    written = manifest.dump() if isinstance(manifest, Manifest) else manifest
    write_or_check_manifest(run_dir, written, write=False)
    store, spent = _store_results(run_dir)
    dry = _dry_run(route, spent)
    try:
        for work in tasks:
            requests: list[ChatRequest] = []
            for pending in work.pending:
                try:
                    requests.append(pending.build())
                except (RouteError, MediaError) as err:
                    kind = err.kind if isinstance(err, RouteError) else media_failure(err).kind
                    dry.items += 1
                    dry.not_built[kind] = dry.not_built.get(kind, 0) + 1
                    dry.first_errors.setdefault(kind, f"{pending.key}: {err}")
            await estimate_requests(route, requests, store=store, workers=build_workers, dry=dry)
    finally:
        if store is not None:
            store.close()
        await route.aclose()
    return dry


estimate_tasks = blocking(estimate_tasks_async, "Synchronous :func:`estimate_tasks_async` (its parameters).")
