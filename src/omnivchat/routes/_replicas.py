"""Replicas: one model served by several OpenAI-compatible servers (a repeated ``--base-url``, or ``--endpoints``).

Each request goes to the replica with the fewest requests outstanding, never beyond that replica's concurrency. A
replica that refuses connections, or fails several requests in a row (5xx, timeouts, dropped streams), is drained:
it gets no request for a cool-down, then is probed (``GET /models``) and comes back when it answers; each drain in
a row doubles the cool-down. A retry avoids the replica that just failed it. When every replica is drained the
requests wait for the earliest cool-down to end (the note says so) instead of failing, up to ``give_up_s``: a set
that stays down that long (a wrong port, a job that never started) fails its requests rather than wait forever.

Where a request was served is recorded (the store keeps the replica of each attempt); it is not part of a run's
identity: a run resumed with another replica set reuses every completed result. The identity of a replica set is
the API path alone (``replicas:/v1/chat/completions``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml

from omnivchat.errors import OmnivchatError
from omnivchat.routes._types import RouteError

Failure = Literal["refused", "unhealthy", "other"]
"""How an attempt failed, for the replica's health: ``refused`` (no connection: drained at once), ``unhealthy`` (a
5xx, a timeout, a dropped or malformed stream: drained after ``fail_threshold`` in a row), ``other`` (the server
answered; the request itself was the problem: 4xx, a cut reply)."""


class ReplicaError(OmnivchatError, ValueError):
    """A replica list that cannot be used; the message names the file and line (or the option)."""


@dataclass(frozen=True)
class ReplicaSpec:
    """One replica as given: its base URL (up to /v1), its concurrency (None: the model's default) and where it was
    given (``FILE:LINE`` or ``--base-url``), for error messages."""

    url: str
    concurrency: int | None = None
    where: str = "--base-url"


@dataclass(frozen=True)
class ReplicaPolicy:
    """When a replica is drained and for how long."""

    fail_threshold: int = 3
    """Failures in a row (5xx, timeouts, dropped streams) that drain a replica; a refused connection drains it now."""
    cooldown_s: float = 5.0
    """The first cool-down; each further drain without a success in between doubles it."""
    max_cooldown_s: float = 60.0
    probe_timeout_s: float = 5.0
    """How long a probe (``GET {base}/models``) may take."""
    give_up_s: float = 600.0
    """How long every replica may stay drained before waiting requests fail ("connection"): a run that cannot
    reach any server must end and say so, not look slow forever."""


def check_replica_url(url: str, where: str) -> str:
    """``url`` if it is a usable base URL (http(s), a host, no credentials); ReplicaError naming ``where`` otherwise."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as err:
        raise ReplicaError(f"{where}: {text!r} is not a URL ({err})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ReplicaError(f"{where}: {text!r} is not an http(s)://host/... base URL (e.g. http://node1:8000/v1)")
    if parts.username or parts.password:
        raise ReplicaError(f"{where}: the URL embeds credentials; give the key with --key-file or the environment")
    return text


def label_of(url: str) -> str:
    """How a replica is named in the store and in ``runs show``: scheme, host, port and path (never a query or
    credentials)."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}{parts.path.rstrip('/')}"


def _concurrency(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ReplicaError(f"{where}: concurrency must be a whole number of at least 1, got {value!r}")
    return value


def load_endpoints(path: str | Path) -> list[ReplicaSpec]:
    """The replicas listed in ``path``: a ``.json``/``.yaml``/``.yml`` list (each a URL, or ``{url, concurrency}``),
    or any other file with one ``URL [CONCURRENCY]`` per line (``#`` comments and blank lines skipped).

    Raises ReplicaError naming the file and line of the first problem: an unreadable file, a line that is not a
    URL, a bad concurrency, a duplicate replica, replicas on different API paths, or no replica at all.
    """
    from omnivchat._files import InputError, read_text

    path = Path(path)
    try:
        text = read_text(path, "endpoints file")
    except InputError as err:
        raise ReplicaError(str(err)) from None
    if path.suffix.lower() in (".json", ".yaml", ".yml"):
        specs = _structured(path, text)
    else:
        specs = []
        for number, line in enumerate(text.splitlines(), start=1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            where = f"{path}:{number}"
            if len(words) > 2:
                raise ReplicaError(f"{where}: expected 'URL [CONCURRENCY]', got {len(words)} words")
            concurrency = None
            if len(words) == 2:
                if not words[1].isdigit():
                    raise ReplicaError(f"{where}: concurrency must be a whole number of at least 1, got {words[1]!r}")
                concurrency = _concurrency(int(words[1]), where)
            specs.append(ReplicaSpec(check_replica_url(words[0], where), concurrency, where))
    if not specs:
        raise ReplicaError(f"{path}: no replica listed (one base URL per line, e.g. http://node1:8000/v1)")
    check_replicas(specs)
    return specs


def _structured(path: Path, text: str) -> list[ReplicaSpec]:
    """A JSON or YAML list of replicas, each item located by its line."""
    if path.suffix.lower() == ".json":
        try:
            json.loads(text)
        except RecursionError:
            raise ReplicaError(f"{path}: not valid JSON (nested too deeply)") from None
        except ValueError as err:
            line = getattr(err, "lineno", None)
            raise ReplicaError(f"{path}:{line}: not valid JSON ({getattr(err, 'msg', err)})") from None
    try:
        root = yaml.compose(text)  # nodes keep their line, for messages (JSON parses as YAML too)
    except RecursionError:
        raise ReplicaError(f"{path}: not valid YAML (nested too deeply)") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ReplicaError(f"{where}: not valid YAML ({getattr(err, 'problem', None) or err})") from None
    if root is None:
        return []
    if not isinstance(root, yaml.SequenceNode):
        raise ReplicaError(
            f"{path}:{root.start_mark.line + 1}: expected a list of replicas (URLs or {{url, concurrency}})"
        )
    specs = []
    for node in root.value:
        where = f"{path}:{node.start_mark.line + 1}"
        value = yaml.safe_load(yaml.serialize(node))
        if isinstance(value, str):
            specs.append(ReplicaSpec(check_replica_url(value, where), None, where))
            continue
        if not isinstance(value, dict) or not isinstance(value.get("url"), str):
            raise ReplicaError(f"{where}: expected a URL or a mapping with 'url' (and optional 'concurrency')")
        unknown = sorted(set(value) - {"url", "concurrency"})
        if unknown:
            raise ReplicaError(f"{where}: unknown field {unknown[0]!r} (a replica has 'url' and 'concurrency')")
        concurrency = value.get("concurrency")
        specs.append(
            ReplicaSpec(
                check_replica_url(value["url"], where),
                None if concurrency is None else _concurrency(concurrency, where),
                where,
            )
        )
    return specs


def check_replicas(specs: Sequence[ReplicaSpec]) -> None:
    """Refuse a duplicate replica and replicas on different API paths (a run's identity is the path)."""
    seen: dict[str, ReplicaSpec] = {}
    for spec in specs:
        label = label_of(spec.url)
        if label in seen:
            raise ReplicaError(f"{spec.where}: {label} is listed twice (first at {seen[label].where})")
        seen[label] = spec
    first = specs[0] if specs else None
    for spec in specs[1:]:
        assert first is not None
        here, there = urlsplit(spec.url).path.rstrip("/"), urlsplit(first.url).path.rstrip("/")
        if here != there:
            raise ReplicaError(
                f"{spec.where}: every replica must serve the same API path ({here or '/'} here, "
                f"{there or '/'} at {first.where})"
            )


@dataclass
class Replica:
    """One server of a replica set and its health."""

    url: str
    label: str
    concurrency: int
    outstanding: int = 0
    sent: int = 0
    failures: int = 0  # failures in a row (unhealthy kind)
    strikes: int = 0  # drains in a row without a success: the cool-down doubles with each
    drained_until: float | None = None
    probing: bool = False

    @property
    def drained(self) -> bool:
        return self.drained_until is not None


Probe = Callable[[Replica], Awaitable[bool]]


@dataclass
class ReplicaSet:
    """The replicas of one route and their dispatch state (one event loop; no lock needed: nothing awaits between
    choosing a replica and taking it)."""

    replicas: list[Replica]
    policy: ReplicaPolicy = field(default_factory=ReplicaPolicy)
    on_note: Callable[[str | None], None] | None = None
    """Told the waiting note when it changes (the runner shows it on the progress line); None when not waiting."""
    clock: Callable[[], float] = time.monotonic
    note: str | None = None
    _down_since: float | None = None  # when every replica was last found drained (None: one is healthy)
    _changed: asyncio.Event | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @classmethod
    def build(
        cls, specs: Sequence[ReplicaSpec], *, default_concurrency: int, policy: ReplicaPolicy | None = None
    ) -> ReplicaSet:
        check_replicas(specs)
        replicas = [
            Replica(url=s.url.rstrip("/"), label=label_of(s.url), concurrency=s.concurrency or default_concurrency)
            for s in specs
        ]
        return cls(replicas=replicas, policy=policy or ReplicaPolicy())

    @property
    def path(self) -> str:
        return urlsplit(self.replicas[0].url).path.rstrip("/")

    @property
    def identity(self) -> str:
        """What requests and manifests record as the endpoint: the API path, not where it is served."""
        return f"replicas:{self.path}/chat/completions"

    @property
    def capacity(self) -> int:
        """Requests in flight at most, all replicas together."""
        return sum(r.concurrency for r in self.replicas)

    def record(self) -> list[dict[str, Any]]:
        """The replica set as a manifest records it (for information; never part of the identity)."""
        return [{"url": r.label, "concurrency": r.concurrency} for r in self.replicas]

    # ------------------------------------------------------------------------------------------------- dispatch

    def _event(self) -> asyncio.Event:
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed

    def _notify(self) -> None:
        event, self._changed = self._event(), asyncio.Event()
        event.set()

    def _say(self, note: str | None) -> None:
        if note != self.note:
            self.note = note
            if self.on_note is not None:
                self.on_note(note)

    async def acquire(self, probe: Probe, avoid: Collection[str] = ()) -> Replica:
        """The replica for the next attempt, taken (``outstanding`` counted): the one with the fewest requests
        outstanding below its concurrency, preferring one not in ``avoid`` (labels). Waits while every replica is
        busy or drained; drained replicas whose cool-down is over are probed meanwhile."""
        while True:
            now = self.clock()
            self._start_probes(now, probe)
            healthy = [r for r in self.replicas if not r.drained]
            ready = [r for r in healthy if r.outstanding < r.concurrency]
            preferred = [r for r in ready if r.label not in avoid]
            # A retry waits for a busy healthy replica rather than go back to the one that just failed it.
            if not preferred and any(r.label not in avoid for r in healthy):
                ready = []
            pick = preferred or ready
            if pick:
                choice = min(pick, key=lambda r: (r.outstanding, r.outstanding / r.concurrency, r.sent))
                choice.outstanding += 1
                choice.sent += 1
                self._say(None)
                return choice
            timeout = None
            if healthy:
                self._down_since = None
            else:
                self._down_since = now if self._down_since is None else self._down_since
                left = self.policy.give_up_s - (now - self._down_since)
                if left <= 0:
                    raise RouteError(
                        "connection",
                        f"all {len(self.replicas)} replicas unreachable for {now - self._down_since:.0f} s "
                        f"({', '.join(r.label for r in self.replicas)}): gave up; check the servers and resume",
                    )
                ends = [r.drained_until for r in self.replicas if r.drained_until is not None and not r.probing]
                wait = max(0.0, min(ends) - now) if ends else None
                when = f"next probe in {wait:.0f} s" if wait is not None else "probing"
                self._say(f"all {len(self.replicas)} replicas drained: waiting ({when}; giving up in {left:.0f} s)")
                timeout = left if wait is None else min(wait, left)
            event = self._event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=None if timeout is None else timeout + 0.01)

    def release(self, replica: Replica, failure: Failure | None) -> None:
        """Give ``replica`` back after an attempt: None (success) heals it; ``refused`` drains it; ``unhealthy``
        drains it after ``fail_threshold`` in a row; ``other`` changes nothing."""
        replica.outstanding = max(0, replica.outstanding - 1)
        if failure is None:
            replica.failures = 0
            replica.strikes = 0
            replica.drained_until = None  # it answered: whatever drained it is over
        elif failure == "refused":
            self._drain(replica)
        elif failure == "unhealthy":
            replica.failures += 1
            if replica.failures >= self.policy.fail_threshold:
                self._drain(replica)
        self._notify()

    def _drain(self, replica: Replica) -> None:
        if replica.drained:
            return  # already cooling down: more failures of requests sent before do not extend it
        replica.strikes += 1
        replica.failures = 0
        cooldown = min(self.policy.max_cooldown_s, self.policy.cooldown_s * 2 ** (replica.strikes - 1))
        replica.drained_until = self.clock() + cooldown

    def _start_probes(self, now: float, probe: Probe) -> None:
        for replica in self.replicas:
            if replica.drained_until is not None and now >= replica.drained_until and not replica.probing:
                replica.probing = True
                task = asyncio.get_running_loop().create_task(self._probe(replica, probe))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _probe(self, replica: Replica, probe: Probe) -> None:
        try:
            alive = await probe(replica)
        except Exception:  # a probe that fails in any way says the replica is not back
            alive = False
        replica.probing = False
        if alive:
            replica.drained_until = None
            replica.failures = 0
        else:
            replica.strikes += 1
            cooldown = min(self.policy.max_cooldown_s, self.policy.cooldown_s * 2 ** (replica.strikes - 1))
            replica.drained_until = self.clock() + cooldown
        self._notify()

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._changed = None  # a new event loop (a later asyncio.run) gets a new event
