"""Model routes behind one async interface: OpenAI-compatible servers, Gemini (native), simulated models."""

from omnivchat.routes._base import Prepared, Route
from omnivchat.routes._credentials import CredentialError, Secret, read_key_file, resolve_api_key
from omnivchat.routes._defaults import DEFAULTS, PROVIDER_DEFAULT, RouteSettings, SettingsError, resolve_settings
from omnivchat.routes._redact import Redactor, redact
from omnivchat.routes._registry import get_route
from omnivchat.routes._types import (
    RETRYABLE,
    ChatRequest,
    ChatResponse,
    Delivered,
    HistoryTurn,
    RouteError,
    Sampling,
    SimOracle,
)

__all__ = [
    "DEFAULTS",
    "PROVIDER_DEFAULT",
    "RETRYABLE",
    "ChatRequest",
    "ChatResponse",
    "CredentialError",
    "Delivered",
    "HistoryTurn",
    "Prepared",
    "Redactor",
    "Route",
    "RouteError",
    "RouteSettings",
    "Sampling",
    "Secret",
    "SettingsError",
    "SimOracle",
    "get_route",
    "read_key_file",
    "redact",
    "resolve_api_key",
    "resolve_settings",
]
