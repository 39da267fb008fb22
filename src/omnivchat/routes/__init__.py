"""Model routes behind one async interface: OpenAI-compatible servers, Gemini (native), simulated models."""

from omnivchat.routes._base import Prepared, Route, StructuredOutput, schema_format
from omnivchat.routes._cost import (
    DEFAULT_OUTPUT_TOKENS,
    AttemptCost,
    Price,
    RequestEstimate,
    TokenRates,
    attempt_cost,
    estimate_prepared,
    rates_for,
    usage_tokens,
)
from omnivchat.routes._credentials import CredentialError, Secret, is_placeholder, read_key_file, resolve_api_key
from omnivchat.routes._defaults import (
    DEFAULTS,
    PROVIDER_DEFAULT,
    RouteSettings,
    SettingsError,
    describe_delivery,
    resolve_settings,
)
from omnivchat.routes._redact import Redactor, redact
from omnivchat.routes._registry import get_route
from omnivchat.routes._replicas import ReplicaError, ReplicaPolicy, ReplicaSpec, check_replica_url, load_endpoints
from omnivchat.routes._types import (
    RETRYABLE,
    ChatRequest,
    ChatResponse,
    Delivered,
    HistoryTurn,
    ReplyAudio,
    RouteError,
    Sampling,
    SimOracle,
    SpokenReply,
)

__all__ = [
    "DEFAULTS",
    "DEFAULT_OUTPUT_TOKENS",
    "PROVIDER_DEFAULT",
    "RETRYABLE",
    "AttemptCost",
    "ChatRequest",
    "ChatResponse",
    "CredentialError",
    "Delivered",
    "HistoryTurn",
    "Prepared",
    "Price",
    "Redactor",
    "ReplicaError",
    "ReplicaPolicy",
    "ReplicaSpec",
    "ReplyAudio",
    "RequestEstimate",
    "Route",
    "RouteError",
    "RouteSettings",
    "Sampling",
    "Secret",
    "SettingsError",
    "SimOracle",
    "SpokenReply",
    "StructuredOutput",
    "TokenRates",
    "attempt_cost",
    "check_replica_url",
    "describe_delivery",
    "estimate_prepared",
    "get_route",
    "is_placeholder",
    "load_endpoints",
    "rates_for",
    "read_key_file",
    "redact",
    "resolve_api_key",
    "resolve_settings",
    "schema_format",
    "usage_tokens",
]
