"""The one judge engine: any kind of verdict (rubric hits, the style checklist, SocialOmni's How score), asked of
any judge through the run store, parametrised by how the request reads, how a reply parses and what a valid
verdict looks like (its JSON schema, sent in the form the judge's route takes).

A verdict task names a store kind (``rubric``, ``style``, ``judge``...): a judge's requests are stored as
``<kind>:<judge>``, so a second pass sends nothing and a later pass can add a judge. A reply that does not parse
is asked again (bounded), then stays failed: unscored downstream, never a 0.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from omnivchat.judges._config import JudgeSpec
from omnivchat.routes import (
    ChatRequest,
    ChatResponse,
    RetryPolicy,
    Route,
    Secret,
    get_route,
    schema_format,
)
from omnivchat.routes import resolve_settings as _resolve_settings
from omnivchat.runs import Budget, DryRun, Runner, RunStore, RunSummary, check_priced, estimate_requests, tally

V = TypeVar("V", covariant=True)  # a task of one verdict type is a task of any wider one


@dataclass(frozen=True)
class VerdictTask(Generic[V]):
    """One kind of verdict: how to ask for it and how to read it.

    ``request(item_id, spec)`` builds the judge request of an item; ``parse(item_id, text)`` reads a reply into a
    verdict, or None when it does not parse; ``schema(item_id)`` is the JSON schema of a valid verdict (None: the
    task's replies are not JSON, e.g. SocialOmni's bare score), sent when the judge asks for structured output.
    """

    kind: str
    request: Callable[[str, JudgeSpec], ChatRequest]
    parse: Callable[[str, str], V | None]
    schema: Callable[[str], dict[str, Any]] | None = None
    unparseable: str = "verdict does not parse"

    def store_kind(self, judge: str) -> str:
        return f"{self.kind}:{judge}"


def hits_schema(n_criteria: int) -> dict[str, Any]:
    """The JSON schema of a hits verdict over criteria 1..n: ``{"hits": [numbers], "reasoning": "..."}``."""
    return {
        "type": "object",
        "properties": {
            "hits": {"type": "array", "items": {"type": "integer", "enum": list(range(1, n_criteria + 1))}},
            "reasoning": {"type": "string"},
        },
        "required": ["hits", "reasoning"],
        "additionalProperties": False,
    }


def response_format(spec: JudgeSpec, route_kind: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the request carries to constrain a verdict to ``schema``, in the form the judge's route takes
    (``routes.schema_format``: ``auto`` constrains only where the route's form is certain). A fixed
    ``response_format`` in the judges file wins."""
    if spec.response_format is not None:
        return spec.response_format
    return schema_format(route_kind, schema, spec.structured_output, name="verdict", strict=True)


def judge_key(spec: JudgeSpec) -> Secret | None:
    """The key a judge sends, or None for none (``routes.ModelSpec.key``: the rule every file naming models
    follows), refused before anything is sent when its variable is not set."""
    return spec.key(f"judge {spec.name!r}", "judges file")


def judge_route(spec: JudgeSpec, *, thinking_off_by_default: bool = True) -> Route:
    """A judge's route: its key checked before anything is sent, through the environment's proxy (judges are
    hosted services: HTTP_PROXY / HTTPS_PROXY / NO_PROXY apply, as in the SocialOmni runner).

    Thinking (``enable_thinking``): with ``thinking_off_by_default`` (rubric and style judges) the judge's
    setting, off unless the file says otherwise, is sent only where the route takes the switch; without it (a
    protocol that fixes its requests, as SocialOmni's) it is sent exactly when the judges file gives it.
    """
    key = judge_key(spec)
    if thinking_off_by_default:
        takes_switch = _resolve_settings(spec.model).thinking is not None
        thinking = spec.thinking if takes_switch else None
    else:
        thinking = spec.thinking if "thinking" in spec.model_fields_set else None
    return get_route(
        spec.model,
        api_key=key,
        no_key=key is None,
        trust_env=True,
        media_input="none",
        thinking=thinking,
        include_modalities=spec.include_modalities,
        reasoning_effort=spec.reasoning_effort,
        max_concurrency=spec.max_concurrency,
        timeout_s=spec.timeout_s,
        **spec.settings_overrides(),
    )


def check_judges_priced(specs: Sequence[JudgeSpec]) -> None:
    """Refuse a budget when a judge has no price (the judges file's, else its model's route defaults), before
    anything is written or sent."""
    from omnivchat.runs import BudgetError

    for spec in specs:
        if spec.price is None and _resolve_settings(spec.model).price is None:
            raise BudgetError(
                f"--budget needs a price for {spec.model} (judge {spec.name!r}: give it a price in the judges "
                "file), and it has none (docs/costs.md)"
            )


@dataclass
class Job:
    """One judge on one task over some items."""

    spec: JudgeSpec
    task: VerdictTask[Any]
    items: Sequence[str]


async def ask(
    store: RunStore,
    jobs: Sequence[Job],
    *,
    run_dir: Path,
    max_attempts: int = RetryPolicy.max_attempts,
    progress: bool = True,
    thinking_off_by_default: bool = True,
    budget_usd: float | None = None,
) -> dict[str, RunSummary]:
    """Send every missing verdict of every job concurrently (each judge at its own concurrency); stored ones are
    reused. Returns a summary per store kind. Every route is made, and every key checked, before anything is
    sent.

    ``budget_usd``: the run directory's total spending limit, shared by every judge (what the store spent before
    counts; see :mod:`omnivchat.runs._budget`): verdicts past it are not asked (each summary's ``not_sent``)."""
    prepared = []
    for job in jobs:
        route = judge_route(job.spec, thinking_off_by_default=thinking_off_by_default)
        prepared.append((job, route))
    budget = None
    if budget_usd is not None:
        budget = Budget(budget_usd)
        for job, route in prepared:
            check_priced(route, f" (judge {job.spec.name!r}: give it a price in the judges file)")
        budget.before = tally(store.cost_rows()).total
    summaries: dict[str, RunSummary] = {}

    async def one(job: Job, route: Route) -> None:
        task, spec = job.task, job.spec
        kind = task.store_kind(spec.name)

        def accept(request: ChatRequest, response: ChatResponse) -> str | None:
            return None if task.parse(request.item_id, response.text) is not None else task.unparseable

        def build(item_id: str) -> ChatRequest:
            request = task.request(item_id, spec)
            form = response_format(spec, route.settings.route, task.schema(item_id) if task.schema else None)
            return request if form is None else request.model_copy(update={"response_format": form})

        runner = Runner(
            route,
            store,
            concurrency=spec.max_concurrency,
            retry=RetryPolicy(max_attempts=max_attempts),
            kind=kind,
            accept=accept,
            budget=budget,
        )
        summary = summaries[kind] = RunSummary(run_dir=run_dir, total=len(job.items), budget=budget)
        try:
            await runner.run_all([(build(i), {}) for i in job.items], summary, progress=progress, label=kind)
        finally:
            await route.aclose()

    await asyncio.gather(*(one(job, route) for job, route in prepared))
    return summaries


async def estimate_jobs(store: RunStore | None, jobs: Sequence[Job], *, thinking_off_by_default: bool = True) -> DryRun:
    """The dry run of :func:`ask`: every verdict request built and prepared, those the store answered before left
    out, the rest counted with their estimated cost (each judge at its own price); nothing is sent."""
    total: DryRun | None = None
    for job in jobs:
        route = judge_route(job.spec, thinking_off_by_default=thinking_off_by_default)
        try:
            requests = []
            for item_id in job.items:
                request = job.task.request(item_id, job.spec)
                schema = job.task.schema(item_id) if job.task.schema else None
                form = response_format(job.spec, route.settings.route, schema)
                requests.append(request if form is None else request.model_copy(update={"response_format": form}))
            dry = await estimate_requests(route, requests, store=store)
        finally:
            await route.aclose()
        dry.model = job.task.store_kind(job.spec.name)
        if total is None:
            total = dry
        else:
            total.merge(dry)
            total.model = "judges"
    return total or DryRun(model="judges")


NOT_JUDGED = "not judged"
"""The reason :func:`stored_verdict` gives for a reply the judge has no verdict row for."""


def stored_verdict(store: RunStore, task: VerdictTask[V], judge: str, item_id: str) -> tuple[V | None, str]:
    """(verdict, why): the stored verdict of ``judge`` on an item, or None with the reason (not judged, the
    request's failure, or a reply that does not parse)."""
    row = store.item(item_id, task.store_kind(judge))
    if row is None:
        return None, NOT_JUDGED
    if row["status"] != "done":
        return None, f"{row['error_kind']}: {row['error']}"
    result = store.result(row["key"])
    verdict = task.parse(item_id, result.text) if result else None
    return verdict, "ok" if verdict is not None else f"unparseable: {task.unparseable}"
