"""A benchmark's own options: the options only one benchmark reads (hf's ``--columns``, SocialOmni's
``--contexts``...) travel as a plain dict on the shared bags (``Source.options``, ``JudgeOptions.options``,
``ScoreOptions.options``), and the benchmark declares a pydantic model per phase (:class:`OwnOptions`) they are
validated against before any work. An option a benchmark does not take is an error, never silently ignored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, ValidationError

from omnivchat.benchmarks._protocol import ReadsSource, Source
from omnivchat.errors import OmnivchatError

__all__ = [
    "BenchmarkOptionError",
    "OptionsModel",
    "OwnOptions",
    "Phase",
    "check_options",
    "check_source",
    "read_options",
]

Phase = Literal["load", "judge", "score"]
"""Where options are given: ``load`` (``Source.options``: eval, ablate), ``judge`` (``JudgeOptions.options``),
``score`` (``ScoreOptions.options``)."""

_COMMANDS: dict[str, str] = {"load": "eval", "judge": "judge", "score": "score"}

M = TypeVar("M", bound=BaseModel)


class BenchmarkOptionError(OmnivchatError):
    """An option given to a benchmark that does not take it, or a value it does not accept."""


class OptionsModel(BaseModel):
    """A base for a benchmark's options model: unknown options are refused, values are not coerced across types."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@runtime_checkable
class OwnOptions(Protocol):
    """A benchmark that takes options of its own: per phase, the pydantic model (``extra="forbid"``, e.g. on
    :class:`OptionsModel`) its options are validated against. A benchmark without it takes none."""

    option_models: Mapping[Phase, type[BaseModel]]


def flag(name: str) -> str:
    """The CLI flag an option comes from: ``asr_wer`` -> ``--asr-wer``."""
    return "--" + name.replace("_", "-")


def _takes(model: type[BaseModel] | None) -> str:
    if model is None or not model.model_fields:
        return "it takes no options of its own"
    return "it takes " + ", ".join(flag(n) for n in model.model_fields)


def check_options(benchmark: object, phase: Phase, given: Mapping[str, Any]) -> BaseModel | None:
    """Validate ``given`` against the benchmark's model for ``phase`` (None where it declares none and none are
    given); raises :class:`BenchmarkOptionError`, one line naming the benchmark, the option (as its CLI flag) and
    what the benchmark takes. Pure: call it before any request is sent or anything is written."""
    name = str(getattr(benchmark, "name", type(benchmark).__name__))
    models = benchmark.option_models if isinstance(benchmark, OwnOptions) else {}
    model = models.get(phase)
    where = f"({_COMMANDS[phase]})"
    if model is None:
        if given:
            flags = ", ".join(flag(k) for k in given)
            raise BenchmarkOptionError(f"the {name} benchmark does not take {flags} {where}: {_takes(None)}")
        return None
    try:
        return model.model_validate(dict(given))
    except ValidationError as err:
        problems = []
        for e in err.errors():
            option = flag(str(e["loc"][0])) if e["loc"] else "options"
            if e["type"] == "extra_forbidden":
                problems.append(f"the {name} benchmark does not take {option} {where}")
            else:
                problems.append(f"the {name} benchmark: {option} {where}: {e['msg']} (given {e['input']!r})")
        raise BenchmarkOptionError(f"{'; '.join(problems)}: {_takes(model)}") from None


def read_options(benchmark: object, phase: Phase, given: Mapping[str, Any], model: type[M]) -> M:
    """The benchmark's own options for ``phase`` as its typed ``model`` (the one it declares), validated."""
    checked = check_options(benchmark, phase, given)
    if checked is None:
        return model()
    if not isinstance(checked, model):  # a benchmark reading a model it does not declare for the phase
        raise TypeError(f"{type(checked).__name__} is not {model.__name__}")
    return checked


_SOURCE_FLAGS = {"media": "--media", "tasks": "--tasks"}


def check_source(benchmark: object, source: Source) -> None:
    """Check what a benchmark is given to load, before anything is sent or written: its own options
    (:func:`check_options`, phase ``load``), and the shared source fields it declares it does not read
    (:class:`ReadsSource`), refused in one line naming the benchmark and the flags."""
    check_options(benchmark, "load", source.options)
    if not isinstance(benchmark, ReadsSource):
        return
    ignored = [f for f in _SOURCE_FLAGS if getattr(source, f) is not None and f not in benchmark.reads_source]
    if ignored:
        name = str(getattr(benchmark, "name", type(benchmark).__name__))
        reads = ", ".join(["--data", *(_SOURCE_FLAGS[f] for f in _SOURCE_FLAGS if f in benchmark.reads_source)])
        flags = ", ".join(_SOURCE_FLAGS[f] for f in ignored)
        raise BenchmarkOptionError(f"the {name} benchmark does not take {flags} (eval): it reads {reads}")
