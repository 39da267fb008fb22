"""The error every SocialOmni module raises for an input it cannot use."""

from __future__ import annotations

from collections.abc import Sequence

from omnivchat.errors import OmnivchatError


class SocialOmniError(OmnivchatError, ValueError):
    """A SocialOmni input that cannot be used: the message names the file, the item id and the field.

    ``problems`` holds one line per problem when several were collected (else the message alone).
    """

    def __init__(self, message: str, problems: Sequence[str] | None = None) -> None:
        super().__init__(message)
        self.problems: list[str] = list(problems) if problems else [message]
