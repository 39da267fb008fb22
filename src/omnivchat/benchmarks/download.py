"""Downloads of the public benchmarks from the Hugging Face Hub, laid out as their readers expect.

``omnivchat data get NAME -o DIR`` and ``eval --data hf://ORG/NAME[@REVISION]`` both come here. huggingface_hub
(the ``hf`` extra, imported only when a download is made) does the transfers: resumption of a cut connection with
a range request, the shared hub cache (``HF_HUB_CACHE``/``HF_HOME``), ``HF_TOKEN`` for gated sets, ``HF_ENDPOINT``
for mirrors and ``HF_HUB_OFFLINE=1``. Over HTTP it checks each file's size (``Content-Length``, ``X-Linked-Size``)
but hashes nothing. So every file is hashed here against the hub's listing: the sha256 of an LFS file, the git
blob id of a small file. A mismatch is refused, naming the file, and the bad copy leaves the cache.

The steps: list the repository at one commit (sizes and hashes; the listing is kept beside the layout so that an
offline run can do without the hub), keep only the files the reader needs (:data:`RELEASES`, one entry per
benchmark), check the free disk space, download, hash, place each file in DIR (a hard link to the cached blob where
the file system allows, else a copy), unpack archives (zip, tar) into DIR refusing any member that would land
outside it, convert a release whose media are embedded in parquet (OmniBench on the hub: ``Release.convert``) into
the files its reader reads, then load the result with the benchmark's own reader. DIR's marker file
(:data:`MARKER`) records what was made, so a second run resumes and nothing that was not made here is ever
overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import IO

from omnivchat._files import PathOutside, check_output_dir, confine, path_escape
from omnivchat.benchmarks._protocol import Source
from omnivchat.benchmarks._registry import get_benchmark
from omnivchat.benchmarks._tables import INSTALL_HINT, pyarrow
from omnivchat.benchmarks.omnibench import DEFAULT_FILE as OMNIBENCH_FILE
from omnivchat.errors import OmnivchatError
from omnivchat.media import cache_dir

MARKER = ".omnivchat-download.json"
"""The file in DIR that records a download: the repository and commit, and every path made in DIR."""
LAYOUTS = "hf-data"
"""Where ``eval --data hf://`` lays a download out, below the media cache (``$OMNIVCHAT_CACHE_DIR``)."""
ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


class DownloadError(OmnivchatError):
    """A download that cannot be made or used: one line naming the benchmark, the file and what to do."""


@dataclass(frozen=True)
class Release:
    """Where a benchmark's release is on the hub and which of its files the reader needs.

    ``patterns`` are fnmatch patterns on the repository's paths (``*`` crosses folders); an archive among the files
    is unpacked into DIR. ``data`` is what ``--data`` is, relative to DIR; ``media`` is ``--media`` for a reader that
    needs one. ``terms`` is what the user must accept, shown before every download. ``convert``: for a release
    whose media are embedded in its parquet files, how they become the reader's layout (see :class:`Embedded`)."""

    name: str
    repo: str
    patterns: tuple[str, ...]
    terms: str
    data: str = "."
    media: str | None = None
    convert: Embedded | None = None


@dataclass(frozen=True)
class Embedded:
    """Parquet files with the media inside, as the hub's ``datasets`` library writes an ``Audio`` or ``Image``
    column (a struct ``{bytes, path}`` per row), laid out as a reader of files expects: the other columns as one
    JSON-lines file (``jsonl``), each media cell's bytes as ``folder/<the row's name field>``. ``parquet`` picks
    the files converted (the rest are placed as they are); ``key`` is the field that names a row in errors."""

    parquet: str
    jsonl: str
    media: tuple[tuple[str, str, str], ...]  # (media column, field naming its file, folder below DIR)
    key: str = "index"


RELEASES: dict[str, Release] = {
    r.name: r
    for r in (
        Release(
            "worldsense",
            "honglyhly/WorldSense",
            ("worldsense_qa.json", "worldsense_videos*.zip"),
            "the card says cc-by-4.0 (a third party says CC BY-NC 4.0)",
        ),
        Release(
            "dailyomni",
            "liarliar/Daily-Omni",
            ("qa.json", "Videos.tar"),
            "not stated by the release (a third party says CC BY-NC-SA 4.0; clips from AudioSet, Video-MME, FineVideo)",
        ),
        Release(
            # The reader's layout is the GitHub repository's (the JSON-lines file, mm_data/audio, mm_data/image);
            # the hub's m-a-p/OmniBench is parquet with the media embedded, converted into that layout. A copy
            # in the GitHub layout (--repo) is placed as it is.
            "omnibench",
            "m-a-p/OmniBench",
            ("*.parquet", OMNIBENCH_FILE, "mm_data/audio/*", "mm_data/image/*"),
            "not stated by the release",
            convert=Embedded(
                "*.parquet",
                OMNIBENCH_FILE,
                (("audio", "audio_path", "mm_data/audio"), ("image", "image_path", "mm_data/image")),
            ),
        ),
        Release(
            "avodyssey",
            "AV-Odyssey/AV_Odyssey_Bench_LMMs_Eval",
            ("av_odyssey.parquet", "*.zip"),
            "academic use only, no redistribution (the card says apache-2.0, the README says otherwise)",
        ),
        Release(
            "videomme",
            "lmms-lab/Video-MME",
            ("videomme/test-00000-of-00001.parquet", "videos_chunked_*.zip"),
            "academic use only, no redistribution",
        ),
        Release(
            "lvomnibench",
            "KD-TAO/LVOmniBench",
            ("data.json", "videos/*.mp4"),
            "not stated by the release",
        ),
        Release(
            # The hub id is a third party's (vllm-omni's SocialOmni loader); the reader reads level_1/dataset.json
            # and level_2/annotations_200.json, the clips below level_N/videos/.
            "socialomni",
            "alexisty/SocialOmni",
            ("level_1/*", "level_2/*", "data/level_1/*", "data/level_2/*"),
            "not stated by the release",
            media=".",
        ),
    )
}


@dataclass(frozen=True)
class HubFile:
    """One file of the repository as the hub lists it: its size and hash (sha256 for LFS, else the git blob id)."""

    path: str
    size: int
    sha256: str | None = None
    blob_id: str | None = None

    @property
    def archive(self) -> bool:
        return self.path.lower().endswith(ARCHIVES)

    @property
    def etag(self) -> str:
        """The name of its blob in the hub cache."""
        return self.sha256 or self.blob_id or ""


@dataclass(frozen=True)
class Listing:
    repo: str
    commit: str
    files: tuple[HubFile, ...]


@dataclass(frozen=True)
class Downloaded:
    """A finished download: the folder, what ``--data`` and ``--media`` are, the commit and the file count."""

    folder: Path
    data: Path
    media: Path | None
    repo: str
    commit: str
    files: int
    downloaded_bytes: int


DiskFree = Callable[[Path], int]
Say = Callable[[str], None]


def _free(path: Path) -> int:
    return shutil.disk_usage(path).free


# --- where things are -------------------------------------------------------------------------------------------


def hub_cache() -> Path:
    """The hub cache, read from the environment at call time (huggingface_hub reads it once, at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return Path(home).expanduser() / "hub"


def offline() -> bool:
    return (os.environ.get("HF_HUB_OFFLINE") or "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def parse_hf(spec: str) -> tuple[str, str | None]:
    """``hf://ORG/NAME[@REVISION]`` as (repo id, revision). A path option collapses ``//``: ``hf:/`` is read too."""
    rest = re.sub(r"^hf:/+", "", spec.strip())
    repo, _, revision = rest.partition("@")
    if rest == spec.strip() or not re.fullmatch(r"[\w.-]+/[\w.-]+", repo) or (_ and not revision):
        raise DownloadError(f"{spec!r} is not hf://ORG/NAME or hf://ORG/NAME@REVISION")
    return repo, revision or None


def is_hf(spec: str | os.PathLike[str]) -> bool:
    return os.fspath(spec).startswith("hf:/")


def _listing_file(repo: str, revision: str) -> Path:
    safe = re.sub(r"[^\w.-]", "_", revision)
    return cache_dir() / LAYOUTS / "listings" / repo.replace("/", "--") / f"{safe}.json"


def _needs_hub(name: str) -> None:
    """huggingface_hub is the ``hf`` extra's: without it, one line that says how to install it."""
    try:
        import huggingface_hub  # noqa: F401  # imported here only to tell whether it is installed
    except ImportError:
        raise DownloadError(f"{name}: downloading needs huggingface_hub: {INSTALL_HINT}") from None


# --- the listing ------------------------------------------------------------------------------------------------


def list_repo(repo: str, revision: str | None, *, name: str) -> Listing:
    """The repository's files at one commit, from the hub (kept for offline use), or offline from what was kept."""
    wanted = revision or "main"
    if offline():
        kept = _listing_file(repo, wanted)
        if not kept.is_file():
            raise DownloadError(
                f"{name}: HF_HUB_OFFLINE is set and {repo}@{wanted} was never downloaded here "
                f"(no listing at {kept}); download it once online"
            )
        data = json.loads(kept.read_text(encoding="utf-8"))
        return Listing(data["repo"], data["commit"], tuple(HubFile(**f) for f in data["files"]))
    _needs_hub(name)
    from huggingface_hub import HfApi

    try:
        info = HfApi(endpoint=endpoint()).dataset_info(repo, revision=wanted, files_metadata=True)
    except Exception as err:
        raise hub_error(err, name, repo) from None
    if not info.sha or not _COMMIT.match(info.sha):
        raise DownloadError(f"{name}: the hub at {endpoint()} gave no commit for {repo}@{wanted}")
    files = tuple(
        HubFile(s.rfilename, int(s.size or 0), s.lfs.sha256 if s.lfs else None, s.blob_id) for s in info.siblings or ()
    )
    listing = Listing(repo, info.sha, files)
    text = json.dumps({"repo": repo, "commit": info.sha, "files": [f.__dict__ for f in files]}, indent=1)
    for rev in {wanted, info.sha}:
        kept = _listing_file(repo, rev)
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(text, encoding="utf-8")
    return listing


def select(listing: Listing, patterns: tuple[str, ...] | None) -> tuple[HubFile, ...]:
    """The files a reader needs: those matching one of ``patterns`` (all when None), never ``.gitattributes``."""
    return tuple(
        f
        for f in listing.files
        if f.path != ".gitattributes" and (patterns is None or any(fnmatchcase(f.path, p) for p in patterns))
    )


def hub_error(err: Exception, name: str, repo: str) -> DownloadError:
    """The hub's refusal as one line: a gated set says what to accept and where (the link from the hub's answer)."""
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    page = f"{endpoint()}/datasets/{repo}"
    if isinstance(err, LocalEntryNotFoundError) and isinstance(err.__cause__, HfHubHTTPError):
        err = err.__cause__  # the hub's own answer, behind "not in the cache either"
    if isinstance(err, GatedRepoError):
        said = (err.server_message or "").strip()
        link = next(iter(re.findall(r"https?://\S+?(?=[\s.]*(?:\s|$))", said)), page)
        token = "HF_TOKEN is set but that account has no access" if os.environ.get("HF_TOKEN") else "no HF_TOKEN"
        return DownloadError(
            f"{name}: {repo} is gated ({token}): log in at {link}, accept its conditions there, then set HF_TOKEN "
            f"to a read token of that account and run again (the hub said: {said or err.response.status_code})"
        )
    if isinstance(err, RevisionNotFoundError):
        return DownloadError(f"{name}: {repo} has no such revision ({err.server_message or err})")
    if isinstance(err, RepositoryNotFoundError):
        return DownloadError(
            f"{name}: {repo} is not on {endpoint()}, or is private or gated and needs HF_TOKEN (see {page})"
        )
    if isinstance(err, HfHubHTTPError):
        status = err.response.status_code if err.response is not None else "?"
        url = err.response.request.url if err.response is not None else repo
        return DownloadError(f"{name}: {endpoint()} answered {status} for {url}: {err.server_message or err}")
    if isinstance(err, LocalEntryNotFoundError):
        return DownloadError(f"{name}: {repo}: cannot reach {endpoint()} and the file is not in the cache ({err})")
    return DownloadError(f"{name}: cannot reach {endpoint()} for {repo} ({type(err).__name__}: {err})")


# --- the folder's marker ------------------------------------------------------------------------------------------


@dataclass
class Marker:
    """What a download made in DIR: read back by the next run, which resumes it and touches nothing else."""

    benchmark: str
    repo: str
    commit: str = ""
    made: list[str] = field(default_factory=list)
    archives: dict[str, str] = field(default_factory=dict)  # archive path -> "started" | its sha256 once unpacked
    complete: bool = False

    @staticmethod
    def read(folder: Path) -> Marker | None:
        try:
            data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
            return Marker(**data)
        except (OSError, ValueError, TypeError):
            return None

    def write(self, folder: Path) -> None:
        tmp = folder / f"{MARKER}.tmp"
        tmp.write_text(json.dumps(self.__dict__, indent=1), encoding="utf-8")
        os.replace(tmp, folder / MARKER)


def _claim(out: Path, release: Release) -> Marker:
    """DIR's marker: a new one for a new or empty folder, the earlier one of the same set, else a refusal (the
    folder left untouched)."""
    earlier = Marker.read(out) if out.is_dir() else None

    def ours(path: Path) -> bool:
        return earlier is not None and earlier.benchmark == release.name and earlier.repo == release.repo

    try:
        check_output_dir(out, ours=ours, kind=f"an earlier download of {release.name} ({release.repo})")
    except OmnivchatError as err:
        raise DownloadError(f"{release.name}: {err}; nothing in it was changed") from None
    return earlier if earlier is not None and ours(out) else Marker(release.name, release.repo)


# --- hashing and placing ------------------------------------------------------------------------------------------


def file_hash(path: Path, hub_file: HubFile) -> str:
    """The hash the hub lists for this kind of file: sha256 for LFS, else the git blob id (sha1 of a header and
    the content)."""
    digest = hashlib.sha256() if hub_file.sha256 else hashlib.sha1(b"blob %d\x00" % path.stat().st_size)
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _cached_blob(repo: str, hub_file: HubFile) -> Path:
    return hub_cache() / f"datasets--{repo.replace('/', '--')}" / "blobs" / hub_file.etag


def _fetch(release: Release, listing: Listing, hub_file: HubFile) -> Path:
    """The file in the hub cache (downloaded, or resumed, unless there already), its hash checked."""
    _needs_hub(release.name)
    from huggingface_hub import hf_hub_download

    try:
        pointer = Path(
            hf_hub_download(
                listing.repo,
                hub_file.path,
                repo_type="dataset",
                revision=listing.commit,
                cache_dir=hub_cache(),
                endpoint=endpoint(),
                local_files_only=offline(),
            )
        )
    except Exception as err:
        raise hub_error(err, release.name, listing.repo) from None
    blob = pointer.resolve()
    want = hub_file.sha256 or hub_file.blob_id
    got = file_hash(blob, hub_file)
    if want and got != want:
        # A corrupt blob in the shared cache would be reused by every later run: it goes.
        pointer.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        kind = "sha256" if hub_file.sha256 else "git blob id"
        raise DownloadError(
            f"{release.name}: {hub_file.path} from {listing.repo}@{listing.commit[:12]}: {kind} {got} is not the "
            f"hub's {want}; the corrupt copy was removed from the cache: run again to download it anew"
        )
    return blob


def _target(out: Path, relative: str, what: str) -> Path:
    """``out / relative``, refused (naming ``what``) when it would land outside ``out``."""
    if relative.strip("/") == MARKER:
        raise DownloadError(f"{what}: {relative!r} would replace this download's own marker in {out}")
    reason = path_escape(relative)
    if reason or not relative.strip("/") or "\x00" in relative:
        raise DownloadError(f"{what}: {relative!r} would land outside {out} ({reason or 'an empty name'})")
    try:
        confine(out, relative)
    except PathOutside as err:
        raise DownloadError(f"{what}: {err}") from None
    return out / relative


def _writable(dest: Path, relative: str, marker: Marker, also_ours: bool, what: str) -> None:
    """Refuse to replace a file this download did not make."""
    if (dest.exists() or dest.is_symlink()) and not also_ours and relative not in marker.made:
        raise DownloadError(f"{what}: {dest} exists and was not made by this download; it was left as it is")


def _place(blob: Path, dest: Path) -> None:
    """``dest`` becomes the blob's content: a hard link where the file system allows it, else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.omnivchat-tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(blob, tmp)
    except OSError:
        shutil.copyfile(blob, tmp)
    os.replace(tmp, dest)


def _members(archive: Path) -> Iterator[tuple[str, int, Callable[[], IO[bytes]]]]:
    """(name, size, opener) of every regular file in a zip or tar; a link or device member is refused."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                if stat.S_ISLNK(info.external_attr >> 16):
                    raise DownloadError(f"{archive.name}: member {info.filename!r} is a symbolic link; refused")
                yield info.filename, info.file_size, lambda info=info: zf.open(info)  # type: ignore[misc]  # bound per member
        return
    if not tarfile.is_tarfile(archive):
        raise DownloadError(f"{archive.name}: not a zip or tar archive")
    with tarfile.open(archive) as tf:
        for member in tf:
            if member.isdir():
                continue
            if not member.isfile():
                raise DownloadError(f"{archive.name}: member {member.name!r} is not a regular file (a link?); refused")
            yield member.name, member.size, lambda member=member: tf.extractfile(member)  # type: ignore[misc]  # bound per member; a regular member always has a file


def _unpack(archive: Path, hub_file: HubFile, out: Path, marker: Marker, say: Say) -> int:
    """Every member of the archive written below ``out`` (none may land outside it); the count."""
    what = f"{marker.benchmark}: {hub_file.path}"
    started = marker.archives.get(hub_file.path) == "started"  # an interrupted unpacking: its members are ours
    marker.archives[hub_file.path] = "started"
    marker.write(out)
    made: list[str] = []
    for name, _size, opener in _members(archive):
        relative = name.replace("\\", "/").removeprefix("./")
        dest = _target(out, relative, f"{what}: member")
        _writable(dest, relative, marker, started, what)
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.omnivchat-tmp")
        with opener() as src, tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        os.replace(tmp, dest)
        made.append(relative)
    marker.made = sorted(set(marker.made) | set(made))
    marker.archives[hub_file.path] = hub_file.etag
    marker.write(out)
    say(f"unpacked {hub_file.path}: {len(made)} files")
    return len(made)


def _convert(spec: Embedded, parquets: list[tuple[HubFile, Path]], out: Path, marker: Marker, say: Say) -> int:
    """The parquet files (cached blobs) written into ``out`` as ``spec`` says, read a batch of rows at a time
    (never a whole file in memory); the count of files made. A row without its media, or naming a file another
    row names with other bytes, is refused naming the row."""
    what = marker.benchmark
    try:
        pa = pyarrow()
    except OmnivchatError as err:
        raise DownloadError(f"{what}: {err}") from None
    started = any(marker.archives.get(f.path) == "started" for f, _ in parquets)  # an interrupted conversion's
    for hub_file, _ in parquets:
        marker.archives[hub_file.path] = "started"
    marker.write(out)
    jsonl = _target(out, spec.jsonl, f"{what}: converted")
    _writable(jsonl, spec.jsonl, marker, started, what)
    written: dict[str, str] = {}  # a media file made here -> the sha256 of its bytes
    jsonl.parent.mkdir(parents=True, exist_ok=True)
    tmp = jsonl.with_name(f".{jsonl.name}.omnivchat-tmp")
    try:
        with tmp.open("w", encoding="utf-8") as lines:
            for hub_file, blob in parquets:
                try:
                    table = pa.parquet.ParquetFile(blob)
                    names = table.schema_arrow.names
                    batches = table.iter_batches(batch_size=32)
                except (pa.ArrowException, OSError) as err:
                    raise DownloadError(f"{what}: {hub_file.path}: not a readable parquet file ({err})") from None
                absent = [column for column, _, _ in spec.media if column not in names]
                if absent:
                    raise DownloadError(
                        f"{what}: {hub_file.path} has no column {absent[0]!r} with the media (its columns: "
                        f"{', '.join(names)}); is it the right repository?"
                    )
                rows = 0
                for batch in batches:
                    for row in batch.to_pylist():
                        label = f"{what}: {hub_file.path}: row {rows} ({spec.key} {row.get(spec.key)!r})"
                        for column, name_field, folder in spec.media:
                            cell = row.pop(column)
                            if not row.get(name_field) and isinstance(cell, dict) and cell.get("path"):
                                # without the name field, the cell's own file name (unconfirmed which the hub has)
                                row[name_field] = PurePosixPath(str(cell["path"]).replace("\\", "/")).name
                            _write_cell(cell, row.get(name_field), column, name_field, folder, out, marker,
                                        started, written, label)  # fmt: skip
                        lines.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
                        rows += 1
                say(f"converted {hub_file.path}: {rows} rows")
        os.replace(tmp, jsonl)
    finally:
        tmp.unlink(missing_ok=True)
    marker.made = sorted({*marker.made, spec.jsonl, *written})
    for hub_file, _ in parquets:
        marker.archives[hub_file.path] = hub_file.etag
    marker.write(out)
    return 1 + len(written)


def _write_cell(
    cell: object,
    name: object,
    column: str,
    name_field: str,
    folder: str,
    out: Path,
    marker: Marker,
    started: bool,
    written: dict[str, str],
    label: str,
) -> None:
    """One media cell's bytes written to ``out/folder/name``, once per file."""
    data = cell.get("bytes") if isinstance(cell, dict) else None
    if not isinstance(data, bytes) or not data:
        raise DownloadError(f"{label}: the {column!r} cell has no embedded bytes; refused")
    if not isinstance(name, str) or not name.strip():
        raise DownloadError(f"{label}: no {name_field!r} to name its {column} file; refused")
    relative = f"{folder}/{name}"
    dest = _target(out, relative, f"{label}: {name_field}")
    digest = hashlib.sha256(data).hexdigest()
    if relative in written:
        if written[relative] != digest:
            raise DownloadError(f"{label}: {relative} is named by an earlier row with other bytes; refused")
        return  # the same file shared by several rows
    _writable(dest, relative, marker, started, label)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.omnivchat-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, dest)
    written[relative] = digest


# --- the whole download -------------------------------------------------------------------------------------------


def _size(n: int) -> str:
    """A byte count for people: 1.2 GB."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000:
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


def check_space(release: Release, files: tuple[HubFile, ...], out: Path, marker: Marker, disk_free: DiskFree) -> int:
    """Refuse before any download when the disks cannot hold it: what the hub cache lacks, plus what DIR will
    hold (each file, and each archive unpacked, counted at its size: media hardly compress). The bytes to fetch."""
    cache = hub_cache()
    fetch = sum(f.size for f in files if not _cached_blob(release.repo, f).is_file())
    lay = sum(f.size for f in files if f.path not in marker.made and marker.archives.get(f.path) != f.etag)
    cache_home = next((p for p in (cache, *cache.parents) if p.exists()), Path("/"))
    out_home = next((p for p in (out, *out.parents) if p.exists()), Path("/"))
    same = cache_home.stat().st_dev == out_home.stat().st_dev
    needs = [(cache_home, fetch + lay)] if same else [(cache_home, fetch), (out_home, lay)]
    for where, need in needs:
        free = disk_free(where)
        if need > free:
            raise DownloadError(
                f"{release.name}: not enough free disk space on {where}: {_size(need)} needed ({_size(fetch)} to "
                f"download into the hub cache {cache}, {_size(lay)} to lay out in {out}), {_size(free)} free; "
                "free some space, or set HF_HUB_CACHE or -o to a larger disk"
            )
    return fetch


def download(
    release: Release,
    out: Path,
    *,
    revision: str | None = None,
    validate: bool = True,
    disk_free: DiskFree = _free,
    say: Say = print,
) -> Downloaded:
    """Download ``release`` into ``out`` (see the module's docstring), validated by its reader unless
    ``validate`` is False; a complete earlier download of the same commit is re-checked, not fetched again."""
    out = Path(out)
    marker = _claim(out, release)
    say(f"{release.name}: {release.repo} (terms: {release.terms}; check them yourself before you use the data)")
    listing = list_repo(release.repo, revision, name=release.name)
    files = select(listing, release.patterns)
    if not files:
        raise DownloadError(
            f"{release.name}: {release.repo}@{listing.commit[:12]} has no file matching "
            f"{', '.join(release.patterns)} (the reader's layout); is it the right repository?"
        )
    for hub_file in files:  # a listed path that would land outside DIR is refused before anything is fetched
        _target(out, hub_file.path, f"{release.name}: {listing.repo} lists")
    fetch = check_space(release, files, out, marker, disk_free)
    out.mkdir(parents=True, exist_ok=True)
    if marker.commit and marker.commit != listing.commit:
        marker.complete = False
    marker.commit = listing.commit
    marker.write(out)
    total = sum(f.size for f in files)
    say(f"{release.name}: {len(files)} files, {_size(total)} at {listing.commit[:12]} ({_size(fetch)} to download)")
    spec = release.convert
    embedded = [f for f in files if spec is not None and fnmatchcase(f.path, spec.parquet)]
    converted = all(marker.archives.get(f.path) == f.etag for f in embedded)  # by an earlier run, from these files
    to_convert: list[tuple[HubFile, Path]] = []
    for n, hub_file in enumerate(files, 1):
        say(f"[{n}/{len(files)}] {hub_file.path} ({_size(hub_file.size)})")
        if hub_file in embedded:
            if not converted:  # converted from the cache once all are there; never placed in DIR
                to_convert.append((hub_file, _fetch(release, listing, hub_file)))
            continue
        if hub_file.archive and marker.archives.get(hub_file.path) == hub_file.etag:
            continue  # unpacked by an earlier run from this very archive
        blob = _fetch(release, listing, hub_file)
        if hub_file.archive:
            _unpack(blob, hub_file, out, marker, say)
            continue
        dest = _target(out, hub_file.path, f"{release.name}: {hub_file.path}")
        if (
            dest.is_file()
            and hub_file.path in marker.made
            and dest.stat().st_size == hub_file.size
            and file_hash(dest, hub_file) == (hub_file.sha256 or hub_file.blob_id)
        ):
            continue  # placed by an earlier run, unchanged
        _writable(dest, hub_file.path, marker, False, f"{release.name}: {hub_file.path}")
        _place(blob, dest)
        marker.made = sorted({*marker.made, hub_file.path})
        marker.write(out)
    if spec is not None and to_convert:
        _convert(spec, to_convert, out, marker, say)
    data = out / release.data
    media = out / release.media if release.media is not None else None
    if validate:
        say(f"{release.name}: checking the download with the reader...")
        try:
            get_benchmark(release.name).load(Source(data=data, media=media))
        except OmnivchatError as err:
            raise DownloadError(f"{release.name}: downloaded into {out}, but its reader refuses it: {err}") from None
    marker.complete = True
    marker.write(out)
    return Downloaded(out, data, media, listing.repo, listing.commit, len(files), fetch)


def get(
    name: str,
    out: Path,
    *,
    repo: str | None = None,
    revision: str | None = None,
    disk_free: DiskFree = _free,
    say: Say = print,
) -> Downloaded:
    """``omnivchat data get NAME -o DIR``: the benchmark's release (or the copy ``repo``), laid out and validated."""
    if name not in RELEASES:
        raise DownloadError(f"no download for {name!r}; there is one for {', '.join(RELEASES)}")
    release = RELEASES[name] if repo is None else replace(RELEASES[name], repo=repo)
    return download(release, out, revision=revision, disk_free=disk_free, say=say)


def resolve(spec: str, benchmark: str, *, disk_free: DiskFree = _free, say: Say = print) -> Downloaded:
    """``--data hf://ORG/NAME[@REVISION]`` for ``benchmark``: downloaded (the reader's files only, for a benchmark
    with an entry in :data:`RELEASES`; the whole repository otherwise) and laid out below the media cache, one
    folder per commit; a complete layout is used as it is, online or offline. ``eval`` then loads it."""
    repo, revision = parse_hf(spec)
    known = RELEASES.get(benchmark)
    release = (
        replace(known, repo=repo) if known else Release(benchmark, repo, ("*",), "the repository's own: check its card")
    )
    listing = list_repo(repo, revision, name=benchmark)
    out = cache_dir() / LAYOUTS / repo.replace("/", "--") / listing.commit
    marker = Marker.read(out)
    if marker is not None and marker.complete and marker.commit == listing.commit and marker.benchmark == benchmark:
        media = out / release.media if release.media is not None else None
        return Downloaded(out, out / release.data, media, repo, listing.commit, len(marker.made), 0)
    if marker is not None and marker.benchmark != benchmark:
        out = out.with_name(f"{listing.commit}-{benchmark}")
    return download(release, out, revision=listing.commit, validate=False, disk_free=disk_free, say=say)
