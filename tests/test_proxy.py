"""Judge requests honour HTTP_PROXY / NO_PROXY (as the SocialOmni runner does); requests to the model under test
go direct unless --trust-env. Checked through a real forwarding proxy on loopback."""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
from typer.testing import CliRunner

from omnivchat.cli import app
from omnivchat.testing import Behaviour, LoopbackServer

runner = CliRunner()


class _Forward(BaseHTTPRequestHandler):
    """A plain HTTP forward proxy: the request line carries the absolute URL of the target."""

    seen: list[str]

    def _forward(self) -> None:
        target = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.seen.append(f"{self.command} {target.path}")  # type: ignore[attr-defined]
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
        upstream.request(self.command, target.path + (f"?{target.query}" if target.query else ""), body, headers)
        response = upstream.getresponse()
        data = response.read()
        self.send_response(response.status)
        for key, value in response.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_POST = _forward

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def proxy():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forward)
    server.seen = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_judges_use_the_proxy_and_candidates_go_direct(small_bench, tmp_path, proxy, monkeypatch):
    proxy_url = f"http://127.0.0.1:{proxy.server_address[1]}"
    monkeypatch.setenv("HTTP_PROXY", proxy_url)
    monkeypatch.setenv("http_proxy", proxy_url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    verdict = '{"hits": [1], "reasoning": "gate"}'
    with LoopbackServer(default=Behaviour(text=verdict)) as server:
        run_dir = tmp_path / "run"
        args = ["eval", "--bench", str(small_bench.root), "--model", "omni", "--base-url", server.base_url]
        assert runner.invoke(app, [*args, "-o", str(run_dir), "--no-progress"]).exit_code == 0
        assert proxy.seen == [] and server.count == 4  # the model under test: direct

        judges = tmp_path / "judges.json"
        judges.write_text(json.dumps({"judges": [{"name": "j", "model": "judge", "base_url": server.base_url}]}))
        result = runner.invoke(app, ["judge", str(run_dir), "--judges", str(judges), "--no-progress"])
        assert result.exit_code == 0, result.output
        assert proxy.seen.count("POST /v1/chat/completions") == 4  # the judge: through the proxy

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        monkeypatch.setenv("no_proxy", "127.0.0.1")
        other = tmp_path / "judges2.json"
        other.write_text(json.dumps({"judges": [{"name": "k", "model": "judge", "base_url": server.base_url}]}))
        assert runner.invoke(app, ["judge", str(run_dir), "--judges", str(other), "--no-progress"]).exit_code == 0
        assert proxy.seen.count("POST /v1/chat/completions") == 4  # NO_PROXY honoured

        monkeypatch.delenv("NO_PROXY")
        monkeypatch.delenv("no_proxy")
        trusted = tmp_path / "trusted"
        result = runner.invoke(app, [*args, "-o", str(trusted), "--trust-env", "--no-progress"])
        assert result.exit_code == 0, result.output
        assert proxy.seen.count("POST /v1/chat/completions") == 8  # --trust-env: the model too


def test_a_netrc_entry_never_meets_a_judge_key_and_without_a_key_it_is_sent(small_bench, tmp_path, monkeypatch):
    """trust_env reads the netrc file as aiohttp does, but a judge with a key sends only its key: aiohttp would raise
    on the two together (a traceback where a verdict was due). Without a key, the host's netrc login is sent."""
    import base64
    import secrets

    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    login, password = "lab", secrets.token_hex(8)  # made at run time: no credential-like string in the source
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login {login} password {password}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    key = "sk-" + secrets.token_hex(16)
    monkeypatch.setenv("JUDGE_KEY", key)
    verdict = '{"hits": [1], "reasoning": "gate"}'
    with LoopbackServer(default=Behaviour(text=verdict)) as server:
        run_dir = tmp_path / "run"
        args = ["eval", "--bench", str(small_bench.root), "--model", "omni", "--base-url", server.base_url]
        assert runner.invoke(app, [*args, "-o", str(run_dir), "--no-progress"]).exit_code == 0
        judges = tmp_path / "judges.json"
        entries = [
            {"name": "keyed", "model": "judge-a", "base_url": server.base_url, "api_key_env": "JUDGE_KEY"},
            {"name": "open", "model": "judge-b", "base_url": server.base_url},
        ]
        judges.write_text(json.dumps({"judges": entries}))
        for judge in ("keyed", "open"):
            result = runner.invoke(
                app, ["judge", str(run_dir), "--judges", str(judges), "--only-judge", judge, "--no-progress"]
            )
            assert result.exit_code == 0, result.output
        sent = [r.headers.get("Authorization") for r in server.chat_requests[4:]]
    basic = "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()
    assert sent == [f"Bearer {key}"] * 4 + [basic] * 4
