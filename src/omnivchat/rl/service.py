"""The reward service: R(y) of Eq. 4 for batches of sampled replies, graded concurrently, cached and logged.

A batch is a list of :class:`Completion` (prompt id, reply, bench instance). The service groups replies by prompt
id (the N replies G(x) of Eq. 6), asks the rubric grader (one judge, a panel, or the offline rule judge) and the
style grader for every non-empty reply at once under one concurrency bound, and returns one
:class:`RewardTerms` per completion in input order.

- Requests, schemas and parsing are the judge engine's (``rubric_request``, ``style_request``, ``VerdictTask``,
  ``response_format``, ``judge_route``); the sending is the routes' (``send_with_retries``); only the attempt
  records are here, because ``judges.ask`` writes into a run.
- A verdict is cached under its request's identity (the engine's request key: judge model and settings, prompt,
  rubric, reply): in memory, and with ``cache_dir`` in SQLite (a :class:`omnivchat.runs.RunStore` holding every
  attempt), so a repeated reply costs no grader call. Failures are never cached.
- A failure is never a zero: a verdict that fails (after bounded retries for unparseable or transient answers)
  leaves its term None with the reason in ``error``, and the total None when that term has a weight.
- Everything runs on the service's own event-loop thread: ``await score(batch)`` from any loop and
  ``score_sync(batch)`` from any thread (a training loop) share its routes, bound and caches.

    with RewardService(judge="qwen", judges_file="judges.toml", group_size=4, cache_dir="rl-cache") as service:
        terms = service.score_sync([Completion(prompt_id, reply, instance), ...])
        rewards = [t.total for t in terms]  # None: not scored (t.error says why), never a 0
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from collections.abc import Coroutine, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from omnivchat._canonical import sha256_json
from omnivchat._files import check_output_dir, check_output_file
from omnivchat.bench import Instance
from omnivchat.errors import OmnivchatError
from omnivchat.judges import (
    RULE_JUDGE,
    STYLE_REQUIREMENTS,
    JudgePrompts,
    JudgeSpec,
    VerdictTask,
    aliases_for,
    hits_schema,
    judge_route,
    load_judges,
    parse_verdict,
    response_format,
    rubric_request,
    rule_verdict,
    style_request,
)
from omnivchat.rl.rewards import (
    DEFAULT_WEIGHTS,
    check_weights,
    efficiency_rewards,
    format_reward,
    style_reward,
    total_reward,
)
from omnivchat.routes import (
    AdaptiveLimiter,
    AttemptCost,
    AttemptHooks,
    ChatResponse,
    Prepared,
    RetryPolicy,
    Route,
    RouteError,
    send_with_retries,
)
from omnivchat.runs import RunStore
from omnivchat.scoring import is_empty_reply, mean_length, reply_efficiency, rubric_score

CACHE_FILE = "rewards.sqlite"
"""The SQLite verdict cache inside ``cache_dir``."""

T = TypeVar("T")
Verdict = tuple[tuple[int, ...] | None, str]
"""(criterion numbers met, "") or (None, why the verdict is missing)."""


class RewardError(OmnivchatError, ValueError):
    """A reward service that cannot be set up as asked, or a batch it cannot score (an incomplete group)."""


@dataclass(frozen=True)
class Completion:
    """One sampled reply to reward.

    ``prompt_id`` names the prompt x whose N sampled replies form the group G(x) of Eq. 6 (unique per prompt in a
    batch); ``instance`` is the bench instance the reply answers (its rubric and language are graded).
    """

    prompt_id: str
    reply: str
    instance: Instance


class RewardTerms(NamedTuple):
    """The terms of Eq. 4 for one completion; None where a term is not known.

    ``r`` gated rubric score (Eq. 1), ``f`` format, ``e`` efficiency (Eq. 5-6, within the prompt's group), ``s``
    style (None when style is not graded), ``total`` R(y) (None when a term with a non-zero weight is None),
    ``error`` why a graded term is missing (None when none is).
    """

    r: float | None
    f: float
    e: float | None
    s: float | None
    total: float | None
    error: str | None = None


@dataclass
class RewardStats:
    """Grader use: ``calls`` made (HTTP attempts, retries included, and rule-judge evaluations), ``cache_hits``
    (verdicts served without a call: memory, SQLite, or an identical request of the same batch), ``failures``
    (verdicts left missing)."""

    calls: int = 0
    cache_hits: int = 0
    failures: int = 0

    def add(self, other: RewardStats) -> None:
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.failures += other.failures


@dataclass
class _Grader:
    """One judge: the rule judge (no spec, no route) or an LLM judge with its route and its own bound."""

    name: str
    spec: JudgeSpec | None = None
    route: Route | None = None
    limiter: AdaptiveLimiter | None = None


class _CacheAttempts(AttemptHooks):
    """The reward service's side of each grader attempt: counted, and recorded in the SQLite cache when there is
    one with its cost (the routes' price of the server's usage; unknown without a price), as a run's attempts are:
    ``runs.tally`` of the cache's cost rows is what grading cost."""

    def __init__(self, store: RunStore | None, key: str, item_id: str, tally: RewardStats) -> None:
        self.store, self.key, self.item_id, self.tally = store, key, item_id, tally
        self.attempt_id = 0

    async def start(self, attempt: int) -> bool:
        self.tally.calls += 1
        if self.store is not None:
            self.attempt_id = self.store.start_attempt(self.key, self.item_id)
        return True

    def ended(self, outcome: ChatResponse | RouteError, cost: AttemptCost) -> None:
        if self.store is not None:
            self.store.finish_attempt(self.attempt_id, self.key, outcome)
            self.store.record_cost(self.attempt_id, cost.usd, cost.note)


def _rubric_task(
    instance: Instance, reply: str, policy_model: str, aliases: list[str], prompts: JudgePrompts
) -> VerdictTask[list[int]]:
    """The engine's rubric verdict (Eq. 1 hits over criteria 1..K) for one reply."""
    return VerdictTask[list[int]](
        kind="rubric",
        request=lambda _item, spec: rubric_request(
            instance, reply, model_id=policy_model, aliases=aliases, prompts=prompts, spec=spec
        ),
        parse=lambda _item, text: parse_verdict(text, len(instance.rubric)),
        schema=lambda _item: hits_schema(len(instance.rubric)),
        unparseable="rubric verdict does not parse",
    )


def _style_task(instance: Instance, reply: str, prompts: JudgePrompts) -> VerdictTask[list[int]]:
    """The engine's style checklist verdict (requirements 1..7 satisfied) for one reply."""
    return VerdictTask[list[int]](
        kind="style",
        request=lambda _item, spec: style_request(instance, reply, prompts=prompts, spec=spec),
        parse=lambda _item, text: parse_verdict(text, STYLE_REQUIREMENTS),
        schema=lambda _item: hits_schema(STYLE_REQUIREMENTS),
        unparseable="style verdict does not parse",
    )


def _mean(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return math.fsum(known) / len(known) if known else None


class _LoopThread:
    """A private event loop on a daemon thread: the service's routes (HTTP sessions), bounds and caches belong to
    one loop, so every call is run there whatever loop or thread it comes from."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="omnivchat-rewards", daemon=True)
        self.thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("the reward service cannot be called from its own event-loop thread")
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class RewardService:
    """Rewards of Eq. 4-6 for batches of completions (see the module docstring).

    ``judge``: "rule" (the offline rule judge: machine checks, no HTTP), or a judge or panel name of
    ``judges_file`` (a panel's r is the mean of its judges' Eq. 1 scores, as ``collect_scores`` gives it).
    ``style``: grade s(y); by default yes, unless its weight is 0 or no LLM judge is named. Ungraded style leaves
    s None, which needs a style weight of 0. ``style_judge``: the judge that grades style (default: ``judge``
    when it names one LLM judge; a panel needs it named). ``weights``: (w_r, w_f, w_e, w_s) of Eq. 4.
    ``concurrency``: grader requests in flight at most, over every judge (a judge whose entry in the judges file
    sets ``max_concurrency`` also keeps to that). ``cache_dir``: keep verdicts in ``cache_dir/rewards.sqlite``
    across services and processes. ``group_size``: the N replies per prompt; a group of another size is an error,
    unless ``allow_partial_groups``, which computes e over the replies present (and says so in the log). A reply
    whose rubric verdict failed leaves e of its whole group None (Eq. 6 needs every r of the group), unless
    ``allow_partial_groups``, which computes e over the graded replies.
    ``log_path``: append one JSON line per scored batch (a training step). ``policy_model`` and ``aliases``: the
    name the policy should give for itself, for the rubric prompt's ``<model_name>`` criteria. ``retry``:
    attempts and backoff for unparseable or transient grader answers.
    """

    def __init__(
        self,
        *,
        judge: str = RULE_JUDGE,
        judges_file: str | Path | None = None,
        style: bool | None = None,
        style_judge: str | None = None,
        weights: Sequence[float] = DEFAULT_WEIGHTS,
        concurrency: int = 64,
        cache_dir: str | Path | None = None,
        group_size: int | None = None,
        allow_partial_groups: bool = False,
        log_path: str | Path | None = None,
        policy_model: str = "policy",
        aliases: Sequence[str] = (),
        prompts: JudgePrompts | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        try:
            self.weights = check_weights(weights)
        except ValueError as err:
            raise RewardError(str(err)) from None
        if concurrency < 1:
            raise RewardError(f"concurrency must be at least 1, got {concurrency}")
        if group_size is not None and group_size < 1:
            raise RewardError(f"group_size must be at least 1, got {group_size}")
        self.group_size = group_size
        self.allow_partial_groups = allow_partial_groups
        self.retry = retry or RetryPolicy()
        self.policy_model = policy_model
        self._aliases = aliases_for(policy_model, list(aliases))
        self._prompts = prompts or JudgePrompts()

        config = load_judges(judges_file)
        where = str(judges_file) if judges_file is not None else "no judges file given"
        if judge == RULE_JUDGE:
            members = [RULE_JUDGE]
        elif judge in config.judges:
            members = [judge]
        elif judge in config.panels:
            members = list(config.panels[judge])
        else:
            known = ", ".join([*config.judges, *config.panels]) or "none"
            raise RewardError(
                f"judge {judge!r} is not 'rule' nor a judge or panel of the judges file ({where}; it defines: {known})"
            )
        self.judge = judge
        self.members = members
        llm_members = [m for m in members if m != RULE_JUDGE]
        if style is None:
            style = style_judge is not None or (self.weights[3] > 0 and bool(llm_members))
        if style:
            style_judge = style_judge or (judge if judge in config.judges else None)
            if style_judge is None:
                raise RewardError(
                    "the rule judge cannot grade style s(y): name an LLM judge (style_judge=...) or give style a "
                    f"weight of 0 (weights={(*self.weights[:3], 0.0)})"
                    if not llm_members
                    else f"panel {judge!r}: name the judge that grades style (style_judge=...)"
                )
            if style_judge not in config.judges:
                raise RewardError(f"style judge {style_judge!r} is not a judge of the judges file ({where})")
        elif style_judge is not None:
            raise RewardError(f"style=False contradicts style_judge={style_judge!r}")
        elif self.weights[3] > 0:
            reason = "the rule judge cannot grade it" if not llm_members else "style=False"
            raise RewardError(
                f"style is not graded ({reason}), so s(y) is None and its weight must be 0: pass "
                f"weights={(*self.weights[:3], 0.0)}"
            )
        self.style_judge = style_judge

        # Every route is made, and every key checked, before anything is opened or sent.
        self._graders: dict[str, _Grader] = {}
        for name in dict.fromkeys([*members, *([style_judge] if style_judge else [])]):
            if name == RULE_JUDGE:
                self._graders[name] = _Grader(name)
                continue
            spec = config.judges[name]
            # The judges file's max_concurrency (default 2, sized for a whole-bench judge run) binds only when
            # the file sets it: a reward step's throughput is the service's ``concurrency``.
            bound = (
                min(concurrency, spec.max_concurrency) if "max_concurrency" in spec.model_fields_set else concurrency
            )
            self._graders[name] = _Grader(name, spec, judge_route(spec), AdaptiveLimiter(bound))
        self._concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)

        self.log_path = None if log_path is None else check_output_file(Path(log_path), force=True)
        self._store: RunStore | None = None
        if cache_dir is not None:
            folder = check_output_dir(Path(cache_dir), ours=lambda p: (p / CACHE_FILE).is_file(), kind="a reward cache")
            folder.mkdir(parents=True, exist_ok=True)
            self._store = RunStore(folder / CACHE_FILE)
        self._memory: dict[str, tuple[int, ...]] = {}
        self._inflight: dict[str, asyncio.Future[Verdict]] = {}
        self._stats = RewardStats()
        self._step = 0
        self._thread: _LoopThread | None = None
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------------------------------- public

    @property
    def style_graded(self) -> bool:
        """Whether s(y) is graded (else it is None)."""
        return self.style_judge is not None

    @property
    def stats(self) -> RewardStats:
        """Grader calls, cache hits and failures since the service was made (a copy)."""
        return replace(self._stats)

    async def score(self, batch: Sequence[Completion], *, step: int | None = None) -> list[RewardTerms]:
        """The reward terms of every completion, in input order (one training step; ``step`` numbers its log
        line, by default the previous one plus 1)."""
        return await asyncio.wrap_future(self._submit(batch, step))

    def score_sync(self, batch: Sequence[Completion], *, step: int | None = None) -> list[RewardTerms]:
        """:meth:`score` for synchronous callers: blocks until the batch is scored."""
        return self._submit(batch, step).result()

    def close(self) -> None:
        """Stop the event-loop thread, close the judges' connections and the cache. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.submit(self._shutdown()).result()
            thread.stop()
        if self._store is not None:
            self._store.close()

    async def aclose(self) -> None:
        """:meth:`close` without blocking the caller's event loop."""
        await asyncio.to_thread(self.close)

    def __enter__(self) -> RewardService:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> RewardService:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------------------------------- batches

    def _submit(self, batch: Sequence[Completion], step: int | None) -> Future[list[RewardTerms]]:
        batch = list(batch)
        groups, partial = self._groups(batch)  # checked in the caller's thread: a bad batch costs nothing
        with self._lock:
            if self._closed:
                raise RuntimeError("the reward service is closed")
            if self._thread is None:
                self._thread = _LoopThread()
            thread = self._thread
        return thread.submit(self._score(batch, groups, partial, step))

    def _groups(self, batch: list[Completion]) -> tuple[dict[str, list[int]], dict[str, int]]:
        """Indices of each prompt's replies, and the groups of another size than ``group_size`` (when allowed)."""
        groups: dict[str, list[int]] = {}
        for index, completion in enumerate(batch):
            if not isinstance(completion, Completion):
                raise TypeError(f"batch item {index} is a {type(completion).__name__}, not a Completion")
            groups.setdefault(completion.prompt_id, []).append(index)
        for prompt_id, indices in groups.items():
            ids = sorted({batch[i].instance.id for i in indices})
            if len(ids) > 1:
                raise RewardError(f"prompt {prompt_id!r}: its replies answer different instances ({', '.join(ids)})")
        if self.group_size is None:
            return groups, {}
        sizes = {p: len(ix) for p, ix in groups.items() if len(ix) != self.group_size}
        larger = {p: n for p, n in sizes.items() if n > self.group_size}
        if larger or (sizes and not self.allow_partial_groups):
            shown = ", ".join(f"prompt {p!r} has {n}" for p, n in list((larger or sizes).items())[:5])
            more = f" (and {len(larger or sizes) - 5} more)" if len(larger or sizes) > 5 else ""
            if larger:
                raise RewardError(
                    f"groups larger than group_size={self.group_size}: {shown}{more}; a prompt id must name one prompt"
                )
            raise RewardError(
                f"incomplete groups (group_size={self.group_size}): {shown}{more} replies. Eq. 6 compares the N "
                "replies of one prompt: keep each group in one batch on one process (TRL can split a group across "
                "processes, verl reorders batches), or pass allow_partial_groups=True to compute e over the "
                "replies present"
            )
        return groups, sizes

    async def _score(
        self, batch: list[Completion], groups: dict[str, list[int]], partial: dict[str, int], step: int | None
    ) -> list[RewardTerms]:
        started = time.perf_counter()
        tally = RewardStats()
        empty = [is_empty_reply(c.reply) for c in batch]
        wanted: list[tuple[int, str, _Grader]] = []
        for i in range(len(batch)):
            if empty[i]:
                continue  # an empty reply scores r = 0 (and s = 0 where style is graded) without a grader
            wanted += [(i, "rubric", self._graders[member]) for member in self.members]
            if self.style_judge is not None:
                wanted.append((i, "style", self._graders[self.style_judge]))
        asks: list[tuple[int, str, Coroutine[Any, Any, Verdict]]] = [
            (i, kind, self._verdict(grader, kind, batch[i], tally, later=n >= self._concurrency))
            for n, (i, kind, grader) in enumerate(wanted)
        ]
        verdicts = await asyncio.gather(*(coro for _, _, coro in asks))

        rubric: dict[int, list[Verdict]] = {}
        style: dict[int, Verdict] = {}
        for (i, kind, _), verdict in zip(asks, verdicts, strict=True):
            if kind == "rubric":
                rubric.setdefault(i, []).append(verdict)
            else:
                style[i] = verdict
        n = len(batch)
        r: list[float | None] = [0.0 if empty[i] else None for i in range(n)]
        s: list[float | None] = [0.0 if empty[i] and self.style_graded else None for i in range(n)]
        why: list[list[str]] = [[] for _ in range(n)]
        for i, member_verdicts in rubric.items():
            tiers = batch[i].instance.tiers
            missing = [reason for hits, reason in member_verdicts if hits is None]
            if missing:
                why[i].extend(missing)  # a partial panel never yields a number
            else:
                scores = [rubric_score(tiers, hits) for hits, _ in member_verdicts if hits is not None]
                r[i] = math.fsum(scores) / len(scores)
        for i, (hits, reason) in style.items():
            if hits is None:
                why[i].append(reason)
            else:
                s[i] = style_reward(hits)

        e: list[float | None] = [None] * n
        for prompt_id, indices in groups.items():
            graded = [i for i in indices if r[i] is not None]
            if len(graded) < len(indices):
                if not self.allow_partial_groups:
                    # Eq. 6 normalises by the min and max over every reply of G(x): with one r unknown they are
                    # unknown too, and a value computed over the others would be a different reward.
                    note = (
                        f"e undefined: {len(indices) - len(graded)} of the {len(indices)} replies of prompt "
                        f"{prompt_id!r} have no rubric score"
                    )
                    for i in graded:
                        why[i].append(note)
                    continue
                partial[prompt_id] = len(graded)
            values = efficiency_rewards([r[i] or 0.0 for i in graded], [batch[i].reply for i in graded])
            for i, value in zip(graded, values, strict=True):
                e[i] = value

        results = []
        for i, completion in enumerate(batch):
            f = format_reward(completion.reply)
            terms = (r[i], f, e[i], s[i])
            known = all(t is not None for t, w in zip(terms, self.weights, strict=True) if w > 0)
            # a term left None only where its weight is 0 contributes nothing
            total = total_reward(r[i] or 0.0, f, e[i] or 0.0, s[i] or 0.0, self.weights) if known else None
            results.append(RewardTerms(r[i], f, e[i], s[i], total, "; ".join(why[i]) or None))

        self._stats.add(tally)
        self._step = step if step is not None else self._step + 1
        if self.log_path is not None:
            self._log(batch, results, tally, partial, len(groups), time.perf_counter() - started)
        return results

    def _log(
        self,
        batch: list[Completion],
        results: list[RewardTerms],
        tally: RewardStats,
        partial: dict[str, int],
        groups: int,
        elapsed: float,
    ) -> None:
        """One JSON line for the step: the mean of each term over the replies where it is known (Figure 4's
        unweighted terms), raw Reply Efficiency and mean length (Len: non-empty replies), counts, grader use."""
        assert self.log_path is not None
        graded = [(t.r, c.reply) for t, c in zip(results, batch, strict=True) if t.r is not None]
        efficiency = reply_efficiency([r for r, _ in graded], [reply for _, reply in graded]) if graded else math.nan
        spoken = [c.reply for c in batch if not is_empty_reply(c.reply)]
        line: dict[str, Any] = {
            "step": self._step,
            "n": len(results),
            "groups": groups,
            **{name: _mean(getattr(t, name) for t in results) for name in ("r", "f", "e", "s", "total")},
            "reply_efficiency": None if math.isnan(efficiency) else efficiency,
            "reply_length": mean_length(spoken) if spoken else None,
            "unscored": sum(1 for t in results if t.total is None),
            "failures": sum(1 for t in results if t.error is not None),
            "grader_calls": tally.calls,
            "cache_hits": tally.cache_hits,
            "elapsed_s": round(elapsed, 4),
        }
        if partial:
            line["partial_groups"] = partial  # prompt id -> replies e was computed over
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False) + "\n")

    # ------------------------------------------------------------------------------------------- verdicts

    async def _verdict(
        self, grader: _Grader, kind: str, completion: Completion, tally: RewardStats, later: bool = False
    ) -> Verdict:
        """One grader's verdict on one reply: from a cache, from an identical request in flight, or asked.

        ``later``: the verdict is past the first ``concurrency`` of its batch, so it cannot be sent before one of
        those is answered; it is built (and recorded in the cache) one loop turn later, after the first ones have
        been written to their connections, rather than before them: the first wave leaves at once and the rest is
        built while it is in flight."""
        instance, reply = completion.instance, completion.reply
        label = f"{kind}:{grader.name}"
        if grader.spec is None or grader.route is None:
            return self._rule(instance, reply, tally)
        if later:
            await asyncio.sleep(0)
        spec, route = grader.spec, grader.route
        task = (
            _rubric_task(instance, reply, self.policy_model, self._aliases, self._prompts)
            if kind == "rubric"
            else _style_task(instance, reply, self._prompts)
        )
        request = task.request(instance.id, spec)
        form = response_format(spec, route.settings.route, task.schema(instance.id) if task.schema else None)
        if form is not None:
            request = request.model_copy(update={"response_format": form})
        try:
            prepared = route.prepare(request)  # text only: no media work, no thread needed
        except RouteError as err:
            tally.failures += 1
            return None, f"{label}: {err.kind}: {err.message}"
        key = prepared.key  # the engine's request identity: judge model and settings, prompt, rubric, reply
        cached = self._memory.get(key)
        if cached is not None:
            tally.cache_hits += 1
            return cached, ""
        pending = self._inflight.get(key)
        if pending is not None:  # the same request is on its way for another reply: share its outcome
            verdict = await asyncio.shield(pending)
            if verdict[0] is None:
                tally.failures += 1
            else:
                tally.cache_hits += 1
            return verdict
        # Asked inline (not in a task of its own) so that each request leaves as soon as it is built, while the
        # other replies of the batch are still being prepared.
        shared: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._inflight[key] = shared
        try:
            verdict = await self._ask(grader, route, task, label, instance.id, prepared, tally)
        except BaseException as exc:
            if isinstance(exc, asyncio.CancelledError):
                shared.cancel()
            else:
                shared.set_exception(exc)
                shared.exception()  # retrieved: the raise below reports it
            raise
        else:
            shared.set_result(verdict)
        finally:
            del self._inflight[key]
        return verdict

    def _rule(self, instance: Instance, reply: str, tally: RewardStats) -> Verdict:
        """The offline rule judge's verdict (machine checks), cached like any other."""
        rubric = [c.model_dump(mode="json") for c in instance.rubric]
        key = sha256_json({"judge": RULE_JUDGE, "rubric": rubric, "reply": reply})
        cached = self._memory.get(key)
        if cached is not None:
            tally.cache_hits += 1
            return cached, ""
        tally.calls += 1
        hits, why = rule_verdict(instance, reply)
        if hits is None:
            tally.failures += 1
            return None, f"rubric:{RULE_JUDGE}: {why}"
        self._memory[key] = tuple(hits)
        return self._memory[key], ""

    async def _ask(
        self,
        grader: _Grader,
        route: Route,
        task: VerdictTask[list[int]],
        label: str,
        item_id: str,
        prepared: Prepared,
        tally: RewardStats,
    ) -> Verdict:
        """Read the SQLite cache, else send with the routes' sender (bounded retries, as ``runs.Runner``),
        recording every attempt there; an answer that does not parse is an ``unparseable`` attempt, retried."""
        key, store = prepared.key, self._store
        if store is not None:
            stored = store.result(key)
            hits = task.parse(item_id, stored.text) if stored is not None else None
            if hits is not None:
                tally.cache_hits += 1
                self._memory[key] = tuple(hits)
                return self._memory[key], ""
            store.add_request(key, label, route.model_id, route.endpoint, prepared.description)
        assert grader.limiter is not None
        parsed: list[int] | None = None

        def accept(response: ChatResponse) -> str | None:
            nonlocal parsed  # the verdict is parsed once, here: the answer accepted is the last one seen
            parsed = task.parse(item_id, response.text)
            return None if parsed is not None else task.unparseable

        hooks = _CacheAttempts(store, key, item_id, tally)
        sent = await send_with_retries(
            route, prepared, self.retry, limiter=grader.limiter, slots=(self._slots,), accept=accept, hooks=hooks
        )
        if sent.response is not None:
            assert parsed is not None  # accepted: it parsed
            self._memory[key] = tuple(parsed)
            return self._memory[key], ""
        assert sent.error is not None
        tally.failures += 1
        tries = f" ({sent.attempts} attempts)" if sent.attempts > 1 else ""
        return None, f"{label}: {sent.error.kind}: {sent.error.message}{tries}"

    async def _shutdown(self) -> None:
        """On the loop thread: cancel what is still in flight, then close every judge's connections."""
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for grader in self._graders.values():
            if grader.route is not None:
                await grader.route.aclose()
