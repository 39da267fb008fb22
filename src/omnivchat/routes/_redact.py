"""Redaction of the live key from everything a server sends: the one way a server-derived string leaves a route.

A server can echo the key it was sent anywhere: an error body, a chunk that is not JSON, an HTML page, the
reply text, the reasoning, the model name, the usage object, a finish reason. Each route sends its every
RouteError and ChatResponse through a `Redactor` on the way out (`Redactor.error`, `Redactor.response`), and
cuts long server text only with `Redactor.cut`, which redacts *before* it cuts: cutting first can split a key
into two pieces that redaction no longer recognises, and one piece is kept.

What is replaced by ``***`` (case-insensitively):

- the key itself (so ``Bearer KEY`` becomes ``Bearer ***``);
- the key percent-encoded (``quote`` and ``quote_plus``), JSON-escaped and HTML-escaped, where these differ;
- the key in base64 (standard and URL-safe alphabets) inside any base64 text, at each of the three byte
  alignments, as in ``base64("Bearer KEY")`` or a Basic ``user:KEY``: the characters that encode the key's bytes
  alone are replaced, leaving at most two bytes' worth at each end, which are mixed with neighbouring bytes;
- any run of at least `MIN_FRAGMENT` consecutive characters of the key: a key that someone else cut (a proxy
  truncating its message, a library abbreviating a value it shows) leaves such pieces. Shorter runs are kept:
  they are too weak to matter and too common to hunt (``sk-proj-`` is 8 characters every OpenAI key shares);
- the whole key, or the whole key reversed, spelled with up to three characters that are not letters or digits
  between its characters: spaced out, one character per line, split over the lines of one streamed event (which
  the client joins with newlines before it reads them).

Text is redacted once it is assembled (a streamed reply as a whole, never delta by delta), so a key spread over
many chunks is found whole. Not attempted: hex, other encodings, encryption, or letters between a key's
characters.

A placeholder key (``EMPTY``, ``none``, ``x``, anything under 16 characters: `routes.is_placeholder`) is no secret,
and masking it would rewrite what the model said ("the box is empty" -> "the box is ***"). It is masked only where
it stands alone (no letter or digit either side) in what a server says *about* a request (error messages, model,
usage, finish reason), never inside the reply's text, reasoning, transcript or audio (`Redactor.reply`).

A real key that the reply itself held is masked there too, and the response says so (``ChatResponse.redacted``):
the run store and every export record it, so that nobody scores altered text unknowingly.
"""

from __future__ import annotations

import base64
import html
import json
import re
from typing import Any
from urllib.parse import quote, quote_plus

from omnivchat.routes._credentials import Secret, is_placeholder
from omnivchat.routes._types import ChatResponse, RouteError

MASK = "***"
MIN_FRAGMENT = 12
"""Runs of this many key characters or more are redacted wherever they appear."""
_GRAM = 8  # fragment search: 8-character pieces of the key taken every 5 characters find every run of 12 or more
_STRIDE = MIN_FRAGMENT - _GRAM + 1
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SPACER = r"[^0-9A-Za-z]{0,3}"
"""What may stand between two characters of a key spelled out (spaces, newlines, dots, dashes)."""


def _base64_cores(raw: bytes) -> set[str]:
    """The base64 characters that encode only the key's bytes, whatever precedes it, at each alignment."""
    cores = set()
    for start in range(3):
        piece = raw[start:]
        piece = piece[: len(piece) // 3 * 3]
        if len(piece) >= 6:  # 8 base64 characters at least: shorter ones could turn up by chance
            cores.add(base64.b64encode(piece).decode())
            cores.add(base64.urlsafe_b64encode(piece).decode())
    return cores


def key_forms(key: str) -> list[str]:
    """Every spelling of ``key`` that is redacted as a whole, longest first."""
    forms = {
        key,
        quote(key, safe=""),
        quote(key),
        quote_plus(key),
        json.dumps(key, ensure_ascii=True)[1:-1],
        json.dumps(key, ensure_ascii=True)[1:-1].replace("/", "\\/"),
        html.escape(key),
        *_base64_cores(key.encode("utf-8")),
    }
    return sorted((f for f in forms if f), key=lambda f: (-len(f), f))


class Redactor:
    """Removes one key, in all the forms listed in this module's docstring, from strings a server sent."""

    __slots__ = ("_grams", "_key", "_key_bytes", "_pattern", "_spelled", "placeholder")

    def __init__(self, secret: Secret | None) -> None:
        key = secret.reveal() if secret is not None else ""
        self.placeholder = bool(key) and is_placeholder(key)
        """The key is a placeholder: replies are never masked for it, other server text only where it stands alone."""
        self._key_bytes = b"" if self.placeholder else key.encode("utf-8")
        forms = "|".join(map(re.escape, key_forms(key)))
        if self.placeholder:
            forms = f"(?<![^\\W_])(?:{forms})(?![^\\W_])"  # alone: no letter or digit either side
        self._pattern = re.compile(forms, re.IGNORECASE) if key else None
        # Fragments are looked for in ASCII keys only (all real API keys): lower-casing keeps positions there.
        real = len(key) >= MIN_FRAGMENT and key.isascii() and not self.placeholder
        self._key = key.translate(_ASCII_LOWER) if real else ""
        self._grams = [(i, self._key[i : i + _GRAM]) for i in range(0, len(self._key) - _GRAM + 1, _STRIDE)]
        # The whole key, or the whole key reversed, spelled with a few characters that are not letters or digits
        # between its characters: spaced out, one character per line, split over the lines of one SSE event.
        spelled = [_SPACER.join(map(re.escape, k)) for k in (key, key[::-1])] if real else []
        self._spelled = re.compile("|".join(spelled), re.IGNORECASE) if spelled else None

    def __repr__(self) -> str:
        return "Redactor(***)"

    def text(self, text: str) -> str:
        """``text`` with the key replaced by ``***`` wherever it appears, whole, encoded or in long pieces."""
        if self._pattern is None or not text:
            return text
        text = self._pattern.sub(MASK, text)
        if self._spelled is not None:
            text = self._spelled.sub(MASK, text)
        return self._fragments(text) if self._key else text

    def reply(self, text: str) -> str:
        """What the model said (text, reasoning, a transcript), redacted as `text` does of a real key; a placeholder
        key is never masked in it (see the module docstring)."""
        return text if self.placeholder else self.text(text)

    def _fragments(self, text: str) -> str:
        lowered = text.translate(_ASCII_LOWER)  # one character for one: positions stay those of ``text``
        key = self._key
        spans: list[tuple[int, int]] = []
        for offset, gram in self._grams:
            found = lowered.find(gram)
            while found >= 0:
                start, end, k_start, k_end = found, found + _GRAM, offset, offset + _GRAM
                while start > 0 and k_start > 0 and lowered[start - 1] == key[k_start - 1]:
                    start, k_start = start - 1, k_start - 1
                while end < len(lowered) and k_end < len(key) and lowered[end] == key[k_end]:
                    end, k_end = end + 1, k_end + 1
                if end - start >= MIN_FRAGMENT:
                    spans.append((start, end))
                found = lowered.find(gram, max(end - _GRAM + 1, found + 1))
        if not spans:
            return text
        pieces, last = [], 0
        for start, end in sorted(spans):
            if end <= last:
                continue
            if start > last:
                pieces.append(text[last:start])
                pieces.append(MASK)
            last = end
        pieces.append(text[last:])
        return "".join(pieces)

    def cut(self, text: str, limit: int) -> str:
        """``text`` redacted, *then* cut to ``limit`` characters (a cut first could split a key in two)."""
        return self.text(text)[:limit]

    def data(self, value: Any) -> Any:
        """JSON-like ``value`` (a usage object, say) with every string in it redacted, dict keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.data(k): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def error(self, err: RouteError) -> RouteError:
        """The same failure with its message and partial text redacted."""
        return RouteError(
            err.kind,
            self.text(err.message),
            http_status=err.http_status,
            retry_after=err.retry_after,
            partial_text=None if err.partial_text is None else self.reply(err.partial_text),
            usage=None if err.usage is None else self.data(err.usage),
        )

    def response(self, response: ChatResponse) -> ChatResponse:
        """The same answer with every string the server sent redacted: text, reasoning, finish reason, model,
        system fingerprint, usage, the transcript of a spoken reply; and the key's bytes masked in its audio.
        ``redacted`` is set when the reply itself (text, reasoning, transcript or audio) was altered."""
        text, reasoning = self.reply(response.text), self.reply(response.reasoning)
        altered = text != response.text or reasoning != response.reasoning
        audio = response.audio
        if audio is not None:
            transcript = None if audio.transcript is None else self.reply(audio.transcript)
            data = self.binary(audio.data)
            altered = altered or transcript != audio.transcript or data != audio.data
            audio = audio.model_copy(update={"data": data, "transcript": transcript})
        return response.model_copy(
            update={
                "text": text,
                "reasoning": reasoning,
                "redacted": response.redacted or altered,
                "finish_reason": self.text(response.finish_reason),
                "model": None if response.model is None else self.text(response.model),
                "system_fingerprint": None
                if response.system_fingerprint is None
                else self.cut(response.system_fingerprint, 200),
                "usage": self.data(response.usage),
                "audio": audio,
            }
        )

    def binary(self, data: bytes) -> bytes:
        """``data`` (audio, say) with the key's UTF-8 bytes masked by as many ``*``: the file keeps its length (a
        placeholder key is not masked: its few bytes turn up in any audio)."""
        if not self._key_bytes or self._key_bytes not in data:
            return data
        return data.replace(self._key_bytes, b"*" * len(self._key_bytes))


def redact(text: str, secret: Secret | None) -> str:
    """``text`` without ``secret`` (see `Redactor` for the forms); for one-off messages from libraries."""
    return Redactor(secret).text(text)
