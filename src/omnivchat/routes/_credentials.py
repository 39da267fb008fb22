"""API keys from the environment or a dotenv-style key file; never printed, logged or stored."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from omnivchat.errors import OmnivchatError


class CredentialError(OmnivchatError, ValueError):
    """A key could not be found; the message names the variable or file and field, never a value."""


MIN_SECRET_LENGTH = 16
"""A key shorter than this is a placeholder, not a secret: every hosted provider's keys are far longer."""
PLACEHOLDER_KEYS = frozenset(
    {"sk-no-key-required", "no-key-required", "not-needed", "not-required", "your-api-key-here", "sk-placeholder"}
)
"""Values people pass where a server needs no key (llama.cpp's sk-no-key-required, ...), compared in lower case;
with every key under `MIN_SECRET_LENGTH` (EMPTY, none, dummy, test, x) and every key of fewer than 6 distinct
characters (sk-xxxxxxxxxxxxxxxx, 0000000000000000), they are placeholders."""


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is too short or too common to be a secret. A placeholder is still never written by us, but
    it is not masked inside what a model said: masking "EMPTY" would turn "the box is empty" into "the box is ***"."""
    return len(value) < MIN_SECRET_LENGTH or value.lower() in PLACEHOLDER_KEYS or len(set(value.lower())) < 6


class Secret:
    """A secret string that does not show itself in repr, str, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    @property
    def placeholder(self) -> bool:
        """Whether the value is a placeholder (see `is_placeholder`), not a secret."""
        return is_placeholder(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:  # never pickled with its value, e.g. into a worker process or a cache
        raise TypeError("a Secret cannot be pickled")


def read_key_file(path: str | Path, field: str) -> Secret:
    """The value of ``field`` in a dotenv file (``NAME=value`` lines, ``export`` prefixes, quotes, # comments),
    parsed by python-dotenv; a UTF-8 byte-order mark is allowed, other encodings are refused by name."""
    from dotenv import dotenv_values

    path = Path(path)
    if "\x00" in str(path):
        raise CredentialError(f"key file {str(path)!r}: the path holds a null byte")
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as err:
        raise CredentialError(f"key file {path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError as err:
        raise CredentialError(f"key file {path}: not UTF-8 text (byte {err.start}); save it as UTF-8") from None
    values = dotenv_values(stream=io.StringIO(text), interpolate=False)
    if field not in values:
        raise CredentialError(f"key file {path}: no field named {field}")
    value = (values[field] or "").strip()
    if not value:
        raise CredentialError(f"key file {path}: field {field} is empty")
    return Secret(value)


def resolve_api_key(
    env_var: str | None = None, key_file: str | Path | None = None, key_field: str | None = None
) -> Secret | None:
    """The key from ``--key-file F --key-field K`` when given, else from ``env_var``; None if neither is set."""
    if key_file is not None:
        if not key_field:
            raise CredentialError("--key-file needs --key-field to name the line holding the key")
        return read_key_file(key_file, key_field)
    if env_var:
        value = os.environ.get(env_var, "").strip()
        if value:
            return Secret(value)
    return None
