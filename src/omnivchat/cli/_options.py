"""The route options every command that talks to a model takes, defined once: `eval`, `ablate`, `check-route` and
`socialomni evaluate` get them from :func:`route_options`, so a flag means the same everywhere."""

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Concatenate, ParamSpec, TypeVar

import typer

if TYPE_CHECKING:
    from omnivchat.judges import Aggregate, JudgesConfig

P = ParamSpec("P")
R = TypeVar("R")


class Thinking(StrEnum):
    on = "on"
    off = "off"
    default = "default"


class MediaInput(StrEnum):
    video_url = "video_url"
    file = "file"
    frames = "frames"
    audio = "audio"
    none = "none"


class Server(StrEnum):
    auto = "auto"
    vllm = "vllm"
    sglang = "sglang"
    llama_cpp = "llama.cpp"
    other = "other"


class AudioDelivery(StrEnum):
    in_video = "in-video"
    separate = "separate"
    none = "none"
    in_video_ = "in_video"  # the earlier spellings, still accepted
    input_audio = "input_audio"


_DELIVERY = {"in-video": "in_video", "in_video": "in_video", "separate": "input_audio", "input_audio": "input_audio"}


@dataclass(frozen=True)
class RouteOptions:
    """The route flags of one command line (None: not given, the model's default applies)."""

    defaults: Annotated[
        Path | None,
        typer.Option("--defaults", help="Your file of per-model defaults (YAML, JSON or TOML; patterns as keys)."),
    ] = None
    base_url: Annotated[
        list[str] | None,
        typer.Option(
            "--base-url",
            help="OpenAI-compatible server URL up to /v1 (a self-served model); repeat it for replicas of one model.",
        ),
    ] = None
    endpoints: Annotated[
        Path | None,
        typer.Option(
            "--endpoints",
            help="File of replica URLs: one 'URL [CONCURRENCY]' per line, or a JSON/YAML list of URLs or "
            "{url, concurrency}. Requests go to the least busy replica; one that fails is drained and probed again.",
        ),
    ] = None
    key_file: Annotated[
        Path | None, typer.Option("--key-file", help="dotenv file holding the key (NAME=value lines).")
    ] = None
    key_field: Annotated[str | None, typer.Option("--key-field", help="Which NAME in --key-file holds the key.")] = None
    no_key: Annotated[
        bool, typer.Option("--no-key", help="Send no key: for a server that needs none (hosted models need one).")
    ] = False
    thinking: Annotated[
        Thinking | None,
        typer.Option("--thinking", help="enable_thinking on or off, or 'default' to leave it to the provider."),
    ] = None
    media_input_type: Annotated[
        MediaInput | None,
        typer.Option(
            "--media-input-type",
            help="How clips are sent: video_url, file, frames, audio (the track alone) or none (text only).",
        ),
    ] = None
    omit_modalities: Annotated[
        bool | None,
        typer.Option("--omit-modalities/--no-omit-modalities", help='Leave out modalities=["text"] (or send it).'),
    ] = None
    audio_delivery: Annotated[
        AudioDelivery | None,
        typer.Option(
            "--audio-delivery",
            help="How the audio reaches the model: in-video (the clip's own track; vLLM is asked to decode it), "
            "separate (also a WAV part, for servers that drop it: SGLang), none.",
        ),
    ] = None
    server: Annotated[
        Server | None,
        typer.Option(
            "--server",
            help="What serves a self-served model (vLLM, SGLang, llama.cpp), whose delivery is then changed for what "
            "it really decodes (SGLang and llama.cpp never hear the audio of a video: a WAV part instead). Default: "
            "auto, asked of the server (GET /v1/models); other: change nothing.",
        ),
    ] = None
    temperature: Annotated[float | None, typer.Option("--temperature", help="Sampling temperature.")] = None
    top_p: Annotated[float | None, typer.Option("--top-p", help="Nucleus sampling top_p.")] = None
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=1, help="max_tokens per reply.")] = None
    seed: Annotated[int | None, typer.Option("--seed", help="Sampling seed, where the server takes one.")] = None
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", min=0.001, help="Seconds one request may take before it fails and is retried (default 600)."
        ),
    ] = None
    trust_env: Annotated[
        bool,
        typer.Option("--trust-env", help="Send through HTTP_PROXY / HTTPS_PROXY (NO_PROXY honoured); default: direct."),
    ] = False

    def overrides(self) -> dict[str, Any]:
        """The flags as RouteSettings overrides (None: not given)."""
        from omnivchat.routes import PROVIDER_DEFAULT

        thinking = self.thinking
        urls = list(self.base_url or [])
        return {
            "base_url": urls[0] if len(urls) == 1 and self.endpoints is None else None,
            "thinking": None if thinking is None else {"on": True, "off": False, "default": PROVIDER_DEFAULT}[thinking],
            "media_input": self.media_input_type.value if self.media_input_type else None,
            "include_modalities": None if self.omit_modalities is None else not self.omit_modalities,
            "audio_delivery": _DELIVERY.get(self.audio_delivery.value, "none") if self.audio_delivery else None,
            "timeout_s": self.timeout,
        }

    def route(self, model: str, speaker: Any = None) -> Any:
        """The route for ``model`` under these flags (raises CredentialError before anything is sent when a
        hosted model has no key); ``speaker`` lets a simulated model answer aloud."""
        from omnivchat.routes import get_route

        if model.startswith(CASCADE):
            self.refuse_for_cascade(model)
        route = get_route(
            model,
            speaker=speaker,
            replicas=self.replicas(),
            key_file=self.key_file,
            key_field=self.key_field,
            defaults_file=self.defaults,
            no_key=self.no_key,
            trust_env=self.trust_env,
            server=self._known_server(model),
            **self.overrides(),
        )
        if model not in getattr(self, "_servers", {}):  # asked once per command: every route of it is sent alike
            object.__setattr__(self, "_servers", {**getattr(self, "_servers", {}), model: route})
        if getattr(route, "key_is_placeholder", False) and not getattr(self, "_noted", False):
            object.__setattr__(self, "_noted", True)  # said once per command, however many routes it makes
            where = f"--key-file {self.key_file} ({self.key_field})" if self.key_file else route.settings.api_key_env
            note(f"the key from {where} {PLACEHOLDER}")
        self._say_server(route)
        return route

    def _known_server(self, model: str) -> Any:
        """What this command learnt of the server of ``model`` from its first route (ablate makes one per
        condition: asked once, and a server that could not be asked is not asked again), else the flag."""
        first = getattr(self, "_servers", {}).get(model)
        if first is None:
            return (self.server or Server.auto).value
        server = getattr(first, "server", None)
        return server if server is not None else None

    def _say_server(self, route: Any) -> None:
        """Once per command: what serves the model and what was changed for it, or why that is not known."""
        if getattr(self, "_server_said", False):
            return
        info, why = getattr(route, "server", None), getattr(route, "server_note", None)
        if info is not None and info.adapted:
            object.__setattr__(self, "_server_said", True)
            for change in info.adapted:
                note(f"{route.model_id} is served by {info.label()}: {change}")
        elif why is not None:
            object.__setattr__(self, "_server_said", True)
            note(why)

    def refuse_for_cascade(self, model: str) -> None:
        """A cascade takes no route flag: its stages name their servers, keys and settings in its FILE, and a flag
        it would ignore is refused rather than silently dropped."""
        from omnivchat.routes import SettingsError

        given = {
            "--base-url": bool(self.base_url),
            "--endpoints": self.endpoints is not None,
            "--key-file": self.key_file is not None,
            "--key-field": self.key_field is not None,
            "--no-key": self.no_key,
            "--thinking": self.thinking is not None,
            "--media-input-type": self.media_input_type is not None,
            "--omit-modalities": self.omit_modalities is not None,
            "--audio-delivery": self.audio_delivery is not None,
            "--timeout": self.timeout is not None,
            "--trust-env": self.trust_env,
            "--server": self.server is not None,
        }
        flags = [flag for flag, on in given.items() if on]
        if flags:
            raise SettingsError(
                f"{model}: {', '.join(flags)} cannot be used with a cascade: each stage's base_url, key "
                f"(api_key_env, no_key) and settings (timeout_s, extra...) go in {model.removeprefix(CASCADE)}"
            )

    def replicas(self) -> Any:
        """The replicas given (``--endpoints``, or ``--base-url`` more than once), or None for one server."""
        from omnivchat.routes import ReplicaError, ReplicaSpec, check_replica_url, load_endpoints

        urls = list(self.base_url or [])
        if self.endpoints is not None:
            if urls:
                raise ReplicaError("give the servers once: --endpoints FILE or --base-url, not both")
            return load_endpoints(self.endpoints)
        if len(urls) < 2:
            return None
        return [ReplicaSpec(check_replica_url(u, f"--base-url {u}"), None, f"--base-url {u}") for u in urls]

    def sampling(self, **fallback: Any) -> Any:
        """The sampling flags, each falling back to ``fallback`` (a protocol's fixed values) when not given."""
        from omnivchat.routes import Sampling

        given = {f: getattr(self, f) for f in ("temperature", "top_p", "max_tokens", "seed")}
        return Sampling(**{**fallback, **{k: v for k, v in given.items() if v is not None}})


CASCADE = "cascade:"
"""The prefix of a cascade model (``routes._cascade``), whose stages take their settings from its FILE."""

PLACEHOLDER = (
    "is treated as a placeholder, not a secret (under 16 characters, or a common placeholder value): it is sent and "
    "never written, and replies are not masked for it"
)


def note(message: str) -> None:
    from omnivchat.cli._app import err_console

    err_console.print(f"note: {message}", markup=False, highlight=False, soft_wrap=True)


def note_placeholder_judges(config: Any, names: Any = None) -> None:
    """Say once per judge whose key is a placeholder that it is one (a key that cannot be found is left to the
    judging pass, which refuses it naming the variable)."""
    from omnivchat.errors import OmnivchatError
    from omnivchat.judges import judge_key

    for name in names or list(config.judges):
        spec = config.judges.get(name)
        try:
            key = judge_key(spec) if spec is not None else None
        except OmnivchatError:
            continue
        if key is not None and key.placeholder:
            note(f"judge {name!r}: its key {PLACEHOLDER}")


def check_choice(flag: str, given: str | Sequence[str], allowed: Sequence[str]) -> None:
    """Refuse a value of ``flag`` that is not one of ``allowed`` as one line naming the flag, its values and the
    value given; a list option (``given`` a sequence: each of its values) needs at least one value."""
    from omnivchat.cli._app import fail

    several = not isinstance(given, str)
    values = list(given) if several else [given]
    wrong = [v for v in values if v not in allowed]
    if wrong or not values:
        said = f"{flag} is {'|'.join(allowed)}" + (" (comma-separated)" if several else "")
        raise fail(said + (f", not {wrong[0]!r}" if wrong else ""))


def aggregate_choice(given: str) -> "Aggregate":
    """``--aggregate``: how a panel's verdicts combine, checked (mean or majority)."""
    check_choice("--aggregate", given, ("mean", "majority"))
    return "majority" if given == "majority" else "mean"


def panel_members(config: "JudgesConfig", panel: str | None, judges_file: Path | None) -> list[str]:
    """The judges ``--panel`` names: one judge of the file or 'rule' (the offline judge), else a panel of the file
    (without --panel its 'default' panel, else every judge); with neither --judges nor --panel, the rule judge. A
    panel named without its judges file is an error, never the rule judge in its place."""
    from omnivchat.judges import RULE_JUDGE

    if panel is not None and (panel in config.judges or panel == RULE_JUDGE):
        return [panel]
    return config.panel(panel) if judges_file is not None or panel else [RULE_JUDGE]


def route_options(command: Callable[Concatenate[RouteOptions, P], R]) -> Callable[P, R]:
    """Give ``command`` every route flag; it receives them as one ``RouteOptions``, its first parameter ``route``.

    The flags are added to the command's signature (typer reads it), after the command's own parameters; typer
    passes every parameter by name, the flags among them.
    """
    signature = inspect.signature(command, eval_str=True)  # typer reads a given __signature__ as it is
    own = [p for name, p in signature.parameters.items() if name != "route"]
    added = [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
        for f in fields(RouteOptions)
    ]
    names = [f.name for f in fields(RouteOptions)]

    @functools.wraps(command)
    def with_route(*args: P.args, **kwargs: P.kwargs) -> R:
        flags: dict[str, Any] = {name: kwargs.pop(name) for name in names if name in kwargs}
        return command(RouteOptions(**flags), *args, **kwargs)

    # typer reads __signature__, which a function's type does not declare: hence the ignore
    with_route.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own), *added]
    )
    return with_route


# Options several commands take, declared once so that a flag reads the same in every --help.
DataOption = Annotated[
    Path,
    typer.Option(
        "--bench",
        "--data",
        help="The benchmark's data: a bench directory, an annotations folder, a JSON file, a local dataset (hf); "
        "on eval also hf://ORG/NAME[@REVISION], downloaded from the Hugging Face Hub (`omnivchat data get`).",
    ),
]
BenchmarkOption = Annotated[
    str, typer.Option("--benchmark", help="Registered benchmark (`omnivchat benchmarks` lists them).")
]
MediaOption = Annotated[Path | None, typer.Option("--media", help="Media folder, for a benchmark that has one.")]
MediaRootOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--media-root",
        help="(--benchmark byo, hf) One more folder the items' media may come from (repeat it for several; recorded "
        "in the manifest). Without it a media path that leads outside the data's folder (absolute, '..', a symlink "
        "out) is refused.",
    ),
]


def media_roots(benchmark: str, given: list[Path] | None) -> tuple[Path, ...]:
    """--media-root's folders: each one a folder, for a benchmark that confines its items' media (byo, hf)."""
    from omnivchat.benchmarks import MediaRoots, get_benchmark
    from omnivchat.errors import OmnivchatError

    roots = tuple(given or ())
    if roots and not isinstance(get_benchmark(benchmark), MediaRoots):
        raise OmnivchatError(f"--media-root is for --benchmark byo or hf; {benchmark} reads its media from its data")
    for root in roots:
        if not root.is_dir():
            raise OmnivchatError(f"--media-root {root}: not a folder")
    return roots


def given_options(**flags: object) -> dict[str, Any]:
    """A benchmark's own options as given on the command line: the flags given (not None), by name; the benchmark
    validates them (``omnivchat.benchmarks.check_options``)."""
    return {name: value for name, value in flags.items() if value is not None}


ColumnsOption = Annotated[
    str | None,
    typer.Option(
        "--columns",
        help="(--benchmark hf) Which column holds each field: FIELD=COLUMN,... (fields qid, question, answer, "
        "options, category, requires, video, audio; a field not given reads the column of its name); FIELD:=VALUE "
        "gives every row the same requires or category (requires:=video+audio). Reads local files only: nothing "
        "is downloaded.",
    ),
]
SplitOption = Annotated[
    str | None,
    typer.Option(
        "--split",
        help="(--benchmark hf) The dataset's split to run (test; config/split where there are several configs); "
        "needed when it has several.",
    ),
]
NoKeyJudgesOption = Annotated[
    bool,
    typer.Option(
        "--no-key",
        help="Judges send no key, even where their model's defaults name one (a judge with its own base_url and no "
        "api_key_env sends none anyway).",
    ),
]
JudgeTimeoutOption = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        min=0.001,
        help="Seconds one verdict request may take before it fails and is asked again (default: the judge "
        "file's timeout_s, else 600).",
    ),
]
ProgressOption = Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")]
OnlyJudgeOption = Annotated[
    str | None, typer.Option("--only-judge", help="Run this one judge; a later run assembles the panel.")
]
BudgetOption = Annotated[
    float | None,
    typer.Option(
        "--budget",
        help="Spend at most this many USD (more than 0) on the run in all (earlier invocations count): nothing more "
        "is sent once the next request would pass it; its items stay not run, and a rerun with a larger budget "
        "resumes. Needs a price for the model (docs/costs.md).",
    ),
]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Send nothing and write nothing: print the requests, media bytes and an estimated cost (docs/costs.md).",
    ),
]
