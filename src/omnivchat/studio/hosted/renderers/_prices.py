"""Price per second of generated video, per model and resolution (shared/reference/video-generation.md, checked
2026-11-30). No provider publishes these as a per-second list price: every default below comes from a relay
(reseller) page or is derived from one, and is unconfirmed. A model without an entry costs None (unknown), never
0; ``price_per_s`` in a renderer's configuration overrides the table."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    usd_per_s: float
    source: str
    confirmed: bool = False


_GEMINI = "relay price (docs.apiyi.com) for gemini-omni-1.2-flash; the official token-billed price is unconfirmed"
_WAN26 = "relay-derived, unconfirmed"
_WAN30 = "derived from relay prices, unconfirmed"
_SEEDANCE = "relay measurement (Seedance 2.0, 720p, 5 s ~ $0.90), unconfirmed; ModelArk bills tokens"

DEFAULT_PRICES: tuple[tuple[str, str, Price], ...] = (
    ("gemini-omni-1.2-flash*", "360p", Price(0.023, _GEMINI)),
    ("gemini-omni-1.2-flash*", "720p", Price(0.07, _GEMINI)),
    ("gemini-omni-1.2-flash*", "1080p", Price(0.105, _GEMINI)),
    ("gemini-omni-1.2-flash*", "4k", Price(0.21, _GEMINI)),
    ("wan2.6-*", "720p", Price(0.10, _WAN26)),
    ("wan2.6-*", "1080p", Price(0.15, _WAN26)),
    ("wan3.0-*", "720p", Price(0.06, _WAN30)),
    ("wan3.0-*", "1080p", Price(0.12, _WAN30)),
    # The date-stamped 2.0 model only: the relay measured it, not the -fast- variant.
    ("dreamina-seedance-2-0-2*", "720p", Price(0.18, _SEEDANCE)),
)
"""(model pattern, resolution, price); Veo 3.1, Wan 2.7, Seedance 1.5 / 2.5 and self-hosted servers have none."""


def price_for(model: str, resolution: str, override: float | None = None) -> Price | None:
    """The price of one second of ``model`` at ``resolution`` ("720p" and "720P" alike); None when unknown."""
    if override is not None:
        return Price(override, "price_per_s in the renderer configuration", confirmed=True)
    res = resolution.lower()
    for pattern, at, price in DEFAULT_PRICES:
        if fnmatch.fnmatchcase(model, pattern) and at == res:
            return price
    return None


def cost_usd(duration_s: float, price: Price | None) -> float | None:
    return None if price is None else round(duration_s * price.usd_per_s, 6)
