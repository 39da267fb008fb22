"""API keys from the environment or a dotenv-style key file; never printed, logged or stored."""

from __future__ import annotations

import os
from pathlib import Path

from omnivchat.errors import OmnivchatError


class CredentialError(OmnivchatError, ValueError):
    """A key could not be found; the message names the variable or file and field, never a value."""


class Secret:
    """A secret string that does not show itself in repr, str, logs or tracebacks."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __reduce__(self):  # never pickled with its value, e.g. into a worker process or a cache
        raise TypeError("a Secret cannot be pickled")


def read_key_file(path: str | Path, field: str) -> Secret:
    """The value of ``field`` in a file of ``NAME=value`` lines (``export`` prefixes, quotes, # comments allowed)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise CredentialError(f"key file {path}: cannot read ({err.strerror})") from None
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        if name.strip() != field:
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if not value:
            raise CredentialError(f"key file {path}: field {field} is empty")
        return Secret(value)
    raise CredentialError(f"key file {path}: no field named {field}")


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


def redact(text: str, secret: Secret | None) -> str:
    """``text`` with every occurrence of the secret replaced, for error messages from libraries."""
    if secret is None or not secret.reveal():
        return text
    return text.replace(secret.reveal(), "***")
