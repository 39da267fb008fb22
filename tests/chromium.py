"""Headless Chromium for the tests of the tool's local pages (``studio inspect``, ``view``): Debian's ``chromium``
(.ci/run installs it) driven over the DevTools protocol with aiohttp's websocket client; nothing but 127.0.0.1 is
reachable from it. A test without the binary skips with :func:`require_chromium`."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import shutil
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest


def chromium_binary() -> str | None:
    return next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)


def require_chromium() -> str:
    binary = chromium_binary()
    if binary is None:
        pytest.skip("no chromium binary found (apt-get install chromium; .ci/run installs it)")
    return binary


class DevTools:
    """The least of the Chrome DevTools protocol: commands on one page target over aiohttp's websocket client."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.next_id = 0

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self.next_id += 1
        sent = self.next_id
        await self.socket.send_json({"id": sent, "method": method, "params": params})
        while True:
            message = await self.socket.receive_json(timeout=60)
            if message.get("id") == sent:
                assert "error" not in message, (method, message["error"])
                return message["result"]

    async def js(self, expression: str) -> Any:
        result = await self.send(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True, userGesture=True
        )
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    async def until(self, expression: str, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = await self.js(expression)
            if value:
                return value
            assert time.monotonic() < deadline, f"timed out waiting for {expression}"
            await asyncio.sleep(0.1)

    async def key(self, key: str, code: str, keycode: int) -> None:
        common = {"key": key, "code": code, "windowsVirtualKeyCode": keycode}
        await self.send("Input.dispatchKeyEvent", type="keyDown", text={"Enter": "\r"}.get(key, key), **common)
        await self.send("Input.dispatchKeyEvent", type="keyUp", **common)

    async def screenshot(self, path: Path) -> None:
        """The page as a PNG at ``path`` (for the notes; tests do not compare pixels)."""
        shot = await self.send("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


async def _page_target(profile: Path, process: subprocess.Popen[bytes]) -> str:
    import aiohttp

    port_file = profile / "DevToolsActivePort"
    deadline = time.monotonic() + 60
    while not (port_file.is_file() and len(port_file.read_text().splitlines()) >= 2):
        assert process.poll() is None, "chromium exited at start"
        assert time.monotonic() < deadline, "chromium did not start its DevTools server"
        await asyncio.sleep(0.1)
    port = int(port_file.read_text().splitlines()[0])
    async with aiohttp.ClientSession() as session:
        while True:
            async with session.get(f"http://127.0.0.1:{port}/json/list") as response:
                pages = [t for t in await response.json() if t.get("type") == "page"]
            if pages:
                return str(pages[0]["webSocketDebuggerUrl"])
            assert time.monotonic() < deadline, "chromium opened no page"
            await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def open_page(binary: str, profile: Path, *, width: int = 1280, height: int = 900) -> AsyncIterator[DevTools]:
    """A headless Chromium with one page (Page events enabled); closed, and its process ended, on exit."""
    import aiohttp

    flags = [
        "--headless",
        "--no-sandbox",  # CI runs as root, where Chromium's sandbox cannot start
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",  # nothing but the loopback server
        "--autoplay-policy=no-user-gesture-required",
        "--allow-file-access-from-files",  # a static export opened from disk reads its JSON beside it
        f"--window-size={width},{height}",
        "--remote-debugging-port=0",
        f"--user-data-dir={profile}",
        "about:blank",
    ]
    process = subprocess.Popen([binary, *flags], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        target = await _page_target(profile, process)
        async with aiohttp.ClientSession() as session, session.ws_connect(target, max_msg_size=0) as socket:
            page = DevTools(socket)
            await page.send("Page.enable")
            yield page
            with contextlib.suppress(Exception):  # the browser may close the socket first
                await page.send("Browser.close")
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
