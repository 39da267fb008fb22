"""A loopback stand-in for the Hugging Face Hub: the routes ``huggingface_hub`` calls to list and download a dataset.

Read from huggingface_hub 2.4's source (``hf_api.dataset_info``, ``file_download.get_hf_file_metadata``,
``http_get``, ``utils._http.hf_raise_for_status``), not guessed:

- ``GET /api/datasets/{repo}[/revision/{rev}]?blobs=true``: the repo's info, ``sha`` (the commit) and ``siblings``
  with ``size``, ``blobId`` (the git oid) and, for an LFS file, ``lfs: {sha256, size, pointerSize}``.
- ``HEAD|GET /datasets/{repo}/resolve/{rev}/{path}``: a small (git) file answers 200 with ``ETag`` (its git oid),
  ``Content-Length`` and ``X-Repo-Commit``; an LFS file answers 302 to a "CDN" on another host name
  (``localhost`` instead of ``127.0.0.1``, so the client neither follows the HEAD's redirect nor forwards the
  token) with ``X-Linked-Etag`` (its sha256), ``X-Linked-Size`` and ``X-Repo-Commit``.
- ``GET /cdn/{sha256}``: the LFS content, with ``Range: bytes=N-`` answered 206 (how the client resumes).
- Errors carry the hub's ``X-Error-Code`` (``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``,
  ``GatedRepo``) and ``X-Error-Message``: a gated repo answers 401 without a token and 403 with a token that has
  not been granted, its message naming the page where access is asked, as the hub does.

Faults a test programs: ``corrupt`` (a file served with other bytes of the same size), ``cut_once`` (the first
GET of a file stops after N bytes and drops the connection), ``failing`` (a file's resolve answers 403), and every
request is recorded.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

HUB_HOST = "127.0.0.1"
CDN_HOST = "localhost"  # another host name for the same server: the client treats it as a CDN, not the hub


def git_blob_sha1(data: bytes) -> str:
    """The git oid of a file's content (what the hub lists as ``blobId`` and answers as a small file's ETag)."""
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


@dataclass
class HubRepo:
    """A dataset repository at one commit: its files, which of them are in LFS, and whether it is gated."""

    files: dict[str, bytes]
    commit: str = "0123456789abcdef0123456789abcdef01234567"
    lfs_suffixes: tuple[str, ...] = (".mp4", ".wav", ".mp3", ".png", ".jpg", ".zip", ".tar", ".parquet")
    gated: bool = False
    granted_tokens: frozenset[str] = frozenset()
    corrupt: set[str] = field(default_factory=set)
    cut_once: dict[str, int] = field(default_factory=dict)
    failing: set[str] = field(default_factory=set)

    def is_lfs(self, path: str) -> bool:
        return path.endswith(self.lfs_suffixes)

    def sibling(self, path: str) -> dict[str, Any]:
        data = self.files[path]
        entry: dict[str, Any] = {"rfilename": path, "size": len(data)}
        if self.is_lfs(path):
            entry["blobId"] = git_blob_sha1(f"oid sha256:{hashlib.sha256(data).hexdigest()}".encode())
            entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        else:
            entry["blobId"] = git_blob_sha1(data)
        return entry


@dataclass(frozen=True)
class HubRequest:
    method: str
    path: str
    range: str | None
    authorized: bool


class HubServer:
    """The hub stand-in on a thread: ``with HubServer({"org/name": HubRepo(...)}) as hub:`` then
    ``HF_ENDPOINT=hub.endpoint``. ``requests`` lists every request made."""

    def __init__(self, repos: dict[str, HubRepo]) -> None:
        self.repos = repos
        self.requests: list[HubRequest] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((HUB_HOST, 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"http://{HUB_HOST}:{self.port}"

    def record(self, request: HubRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def downloads(self) -> list[HubRequest]:
        """The requests that fetched file content (GET of a resolve or CDN route)."""
        return [r for r in self.requests if r.method == "GET" and not r.path.startswith("/api/")]

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _handler(hub: HubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read hub.requests
            return

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

        # --- routing ------------------------------------------------------------------------------------------

        def _serve(self, body: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            token = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
            hub.record(HubRequest(self.command, path, self.headers.get("Range"), bool(token)))
            parts = path.strip("/").split("/")
            if parts[:2] == ["api", "datasets"] and len(parts) >= 4:
                self._info(f"{parts[2]}/{parts[3]}", parts[5] if parts[4:5] == ["revision"] else "main", body)
            elif parts[:1] == ["datasets"] and len(parts) >= 6 and parts[3] == "resolve":
                self._resolve(f"{parts[1]}/{parts[2]}", parts[4], "/".join(parts[5:]), token, body)
            elif parts[:1] == ["cdn"] and len(parts) == 3:
                self._cdn(parts[1], parts[2], body)
            else:
                self._error(404, "RepoNotFound", "Not found", body)

        def _repo(self, repo_id: str, rev: str, body: bool) -> HubRepo | None:
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._error(404, "RepoNotFound", "Repository not found", body)
                return None
            if rev not in ("main", repo.commit):
                self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", body)
                return None
            return repo

        def _info(self, repo_id: str, rev: str, body: bool) -> None:
            repo = self._repo(repo_id, rev, body)
            if repo is None:
                return
            info = {
                "id": repo_id,
                "sha": repo.commit,
                "private": False,
                "gated": "manual" if repo.gated else False,
                "siblings": [repo.sibling(p) for p in sorted(repo.files)],
            }
            self._send(200, json.dumps(info).encode(), {"Content-Type": "application/json"}, body)

        def _resolve(self, repo_id: str, rev: str, file: str, token: str, body: bool) -> None:
            repo = self._repo(repo_id, rev, body)
            if repo is None:
                return
            if repo.gated and token not in repo.granted_tokens:
                page = f"{hub.endpoint}/datasets/{repo_id}"
                if token:
                    message = (
                        f"Access to dataset {repo_id} is restricted and you are not in the authorized list. "
                        f"Visit {page} to ask for access."
                    )
                    self._error(403, "GatedRepo", message, body)
                else:
                    message = (
                        f"Access to dataset {repo_id} is restricted. You must have access to it and be "
                        "authenticated to access it. Please log in."
                    )
                    self._error(401, "GatedRepo", message, body)
                return
            if file in repo.failing:  # 403: huggingface_hub retries a 5xx with back-off for tens of seconds
                self._error(403, "", "Forbidden by this mirror", body)
                return
            if file not in repo.files:
                self._error(404, "EntryNotFound", f"{file} does not exist on {rev}", body, repo.commit)
                return
            sibling = repo.sibling(file)
            headers = {"X-Repo-Commit": repo.commit, "ETag": f'"{sibling["blobId"]}"'}
            if "lfs" in sibling:
                sha = sibling["lfs"]["sha256"]
                headers |= {
                    "Location": f"http://{CDN_HOST}:{hub.port}/cdn/{repo_id.replace('/', '--')}/{sha}",
                    "X-Linked-Etag": f'"{sha}"',
                    "X-Linked-Size": str(sibling["size"]),
                }
                self._send(302, b"", headers, body)
                return
            self._content(repo, file, headers, body)

        def _cdn(self, repo_key: str, sha: str, body: bool) -> None:
            repo = hub.repos.get(repo_key.replace("--", "/"))
            files = repo.files if repo else {}
            match = [p for p, data in files.items() if hashlib.sha256(data).hexdigest() == sha]
            if repo is None or not match:
                self._send(404, b"no such blob", {}, body)
                return
            self._content(repo, match[0], {"ETag": f'"{sha}"'}, body)

        def _content(self, repo: HubRepo, file: str, headers: dict[str, str], body: bool) -> None:
            data = repo.files[file]
            if file in repo.corrupt:  # same size, other bytes: only a hash check notices
                data = bytes(b ^ 0xFF for b in data[:16]) + data[16:]
            start = 0
            wanted = self.headers.get("Range")
            status = 200
            if wanted and wanted.startswith("bytes=") and wanted.endswith("-"):
                start = int(wanted[len("bytes=") : -1])
                status = 206
                headers = headers | {"Content-Range": f"bytes {start}-{len(data) - 1}/{len(data)}"}
            payload = data[start:]
            cut = repo.cut_once.pop(file, None) if body else None
            if cut is not None:  # headers promise everything, then the connection drops
                self.send_response(status)
                for name, value in (headers | {"Content-Length": str(len(payload))}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload[:cut])
                self.wfile.flush()
                self.close_connection = True
                return
            self._send(status, payload, headers, body)

        def _error(self, status: int, code: str, message: str, body: bool, commit: str | None = None) -> None:
            headers = {"X-Error-Message": message, "Content-Type": "application/json"}
            if code:
                headers["X-Error-Code"] = code
            if commit:
                headers["X-Repo-Commit"] = commit
            self._send(status, json.dumps({"error": message}).encode(), headers, body)

        def _send(self, status: int, payload: bytes, headers: dict[str, str], body: bool) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if body:
                self.wfile.write(payload)

    return Handler
