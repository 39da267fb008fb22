"""Incremental parsing of Server-Sent Events as OpenAI-compatible servers stream them."""

from __future__ import annotations


class SSEParser:
    """Feed raw bytes as they arrive (any split, even mid-line); get back the complete events' data fields.

    Lines are split on LF (CRs before it are dropped); an event ends at a blank line; several ``data:`` lines in
    one event are joined with LF, as the SSE specification says. Comments and other fields are ignored.
    """

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        # One split per chunk (not one slice of the whole buffer per line): a chunk holding many events costs
        # linear time. The last piece is a line not ended yet, kept for the next chunk.
        *lines, self._buffer = (self._buffer + chunk if self._buffer else chunk).split(b"\n")
        events: list[str] = []
        data = self._data
        for raw in lines:
            # LF never occurs inside a UTF-8 sequence, so decoding line by line equals decoding the whole.
            line = raw.rstrip(b"\r").decode("utf-8", errors="replace")
            if not line:
                if data:
                    events.append("\n".join(data))
                    data = self._data = []
            elif line.startswith("data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(" ") else value)
        return events

    def close(self) -> list[str]:
        """Events still pending when the stream ends without a final blank line."""
        leftover = self.feed(b"\n\n") if self._buffer or self._data else []
        return leftover
