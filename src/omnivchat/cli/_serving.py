"""The one way a command serves a local page (``view``, ``studio inspect``): say where, open a browser unless told
not to, and serve until Ctrl-C."""

from __future__ import annotations

from typing import Protocol

from omnivchat.cli._app import console, warn


class LocalServer(Protocol):
    url: str

    def wait(self, timeout: float) -> bool: ...

    def stop(self) -> None: ...


def serve_until_stopped(server: LocalServer, *, no_browser: bool) -> None:
    """Print the URL, open it in a browser (a warning when none opens), and serve until Ctrl-C; the server stops."""
    import webbrowser

    try:  # from the first line on: a Ctrl-C as soon as the URL shows stops the server like any later one
        console.print(f"serving {server.url} (Ctrl-C to stop)", highlight=False, soft_wrap=True)
        if not no_browser:
            try:
                opened = webbrowser.open(server.url)
            except webbrowser.Error:
                opened = False
            if not opened:
                warn(f"no browser could be opened; open {server.url} yourself")
        while not server.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
