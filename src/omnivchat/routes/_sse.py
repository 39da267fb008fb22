"""Incremental parsing of Server-Sent Events as OpenAI-compatible servers stream them."""

from __future__ import annotations


class SSEParser:
    """Feed raw bytes as they arrive (any split, even mid-line); get back the complete events' data fields.

    Lines are split on LF (a CR before it is dropped); an event ends at a blank line; several ``data:`` lines in
    one event are joined with LF, as the SSE specification says. Comments and other fields are ignored.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk
        events: list[str] = []
        while True:
            newline = self._buffer.find(b"\n")
            if newline < 0:
                return events
            raw, self._buffer = self._buffer[:newline], self._buffer[newline + 1 :]
            line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
            if not line:
                if self._data:
                    events.append("\n".join(self._data))
                    self._data = []
            elif line.startswith("data:"):
                value = line[5:]
                self._data.append(value[1:] if value.startswith(" ") else value)

    def close(self) -> list[str]:
        """Events still pending when the stream ends without a final blank line."""
        leftover = self.feed(b"\n\n") if self._buffer or self._data else []
        return leftover
