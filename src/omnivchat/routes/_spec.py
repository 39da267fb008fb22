"""One model spec: a model as a judges file or an agents file names it (which model, where, with which key, how it is
asked). Each file's entry is a ModelSpec with its role's few fields and defaults (``judges.JudgeSpec``, the
Studio's ``AgentSpec``); the files keep their formats. :meth:`ModelSpec.settings_overrides` maps it onto
RouteSettings, which the route is made with (``get_route``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from omnivchat.routes._base import StructuredOutput
from omnivchat.routes._cost import Price
from omnivchat.routes._credentials import CredentialError, Secret, resolve_api_key
from omnivchat.routes._defaults import resolve_settings
from omnivchat.routes._types import Sampling


class ModelSpec(BaseModel):
    """The fields every file entry naming a model has. The key is read from ``api_key_env``, never stored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key_env: str | None = None
    no_key: bool = Field(default=False, description="Send no key, even where the model's defaults name one.")
    temperature: float | None = None
    max_tokens: int = Field(default=4096, gt=0)
    thinking: bool | None = None
    structured_output: StructuredOutput = Field(
        default="auto",
        description="How a reply's JSON schema is sent: json_schema (OpenAI, vLLM, SGLang), json_object "
        "(llama.cpp), off; auto: only where certain (the Gemini native route).",
    )
    extra: dict[str, Any] = Field(default_factory=dict, description="Extra fields merged into each request.")
    timeout_s: float | None = Field(default=None, gt=0)
    price: Price | None = Field(
        default=None,
        description="USD per million tokens ({input_per_mtok, output_per_mtok}); default: the model's route "
        "defaults, else cost unknown (docs/costs.md).",
    )

    @property
    def sends_no_key(self) -> bool:
        """No key goes: the entry says ``no_key``, or names its own ``base_url`` and no ``api_key_env`` (a server
        of your own: a hosted key never goes there)."""
        return self.no_key or (self.base_url is not None and not self.api_key_env)

    def key(self, who: str, file: str) -> Secret | None:
        """The key this entry sends, or None for none: from ``api_key_env`` when the entry names it; none when
        :attr:`sends_no_key`; else from its model's default variable (gpt-* OPENAI_API_KEY...). A variable named
        but not set is refused here, before anything is sent, naming ``who`` (``judge 'gpt'``, ``agent
        'reviewer'``) and the ``file`` the entry is in. One rule and one wording for every file that names models."""
        if self.sends_no_key:
            return None
        variable = self.api_key_env or resolve_settings(self.model).api_key_env
        key = resolve_api_key(variable)
        if variable and key is None:
            where = (
                f"api_key_env in the {file}"
                if self.api_key_env
                else f"the default for {self.model}; an entry on a server of your own needs its base_url"
            )
            raise CredentialError(f"{who} needs its key in {variable} ({where}); that variable is not set")
        return key

    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, max_tokens=self.max_tokens)

    def settings_overrides(self) -> dict[str, Any]:
        """The RouteSettings this entry sets over its model's defaults (None: the default): where it is served, the
        extra request fields, the price. A role adds its own (thinking, media input, timeout)."""
        return {
            "base_url": self.base_url,
            "extra_body": self.extra or None,
            "price": self.price.model_dump() if self.price is not None else None,
        }
