"""The viewer in real headless Chromium (Debian's chromium; skipped without it): the list of a run after load,
filters that change the list and its counts, an item with its verdicts and attempts, a video that seeks (Range),
the keyboard, side by side marking a known difference, a hostile run rendered as text, and the static export
opened from disk. Screenshots go to $OMNIVCHAT_SCREENSHOTS when it is set (for the notes), else to tmp_path."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from chromium import DevTools, open_page, require_chromium

from omnivchat.view import ViewServer, export_viewer

HOSTILE_ID = "<img src=x onerror=window.pwned=1>"  # as tests/view/conftest.py writes it


def shots(tmp_path: Path) -> Path:
    return Path(os.environ.get("OMNIVCHAT_SCREENSHOTS") or tmp_path / "screens")


def in_browser(tmp_path: Path, body: Callable[[DevTools], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    binary = require_chromium()

    async def go() -> dict[str, Any]:
        async with open_page(binary, tmp_path / "profile", width=1500, height=1000) as page:
            return await body(page)

    return asyncio.run(asyncio.wait_for(go(), timeout=240))


READY = "document.body && document.body.dataset.ready === 'true'"
ROW_IDS = "[...document.querySelectorAll('#rows tr.item')].map((tr) => tr.dataset.itemId)"
ROW_STATES = "[...document.querySelectorAll('#rows tr.item')].map((tr) => tr.dataset.state)"
COUNTS = "['total', 'scored', 'unscored', 'failed', 'not-run'].map((n) => $('n-' + n).textContent)"
METADATA = """const video = document.querySelector('#detail video');
  if (video.readyState < 1) {
    await new Promise((r) => video.addEventListener('loadedmetadata', r, {once: true}));
  }"""
INJECTED = ", ".join(f"#{where} {tag}" for where in ("rows", "detail") for tag in ("img", "script", "b", "i"))


async def choose(page: DevTools, select: str, value: str) -> None:
    await page.js(
        f"""(() => {{ const s = document.getElementById({json.dumps(select)}); s.value = {json.dumps(value)};
           document.body.dataset.ready = 'false'; s.dispatchEvent(new Event('change')); }})()"""
    )
    await page.until(READY)


def test_list_filters_item_verdicts_attempts_seek_and_keys(native_run: Path, tmp_path: Path) -> None:
    screens = shots(tmp_path)

    async def body(page: DevTools) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with ViewServer([native_run], port=0) as server:
            await page.send("Page.navigate", url=server.url)
            await page.until(READY)
            found["ids"] = await page.js(ROW_IDS)
            found["counts"] = await page.js(COUNTS)
            found["states"] = await page.js(ROW_STATES)
            await page.screenshot(screens / "list.png")
            await choose(page, "f-state", "failed")
            found["failed_ids"] = await page.js(ROW_IDS)
            found["failed_matched"] = await page.js("document.getElementById('n-matched').textContent")
            found["fragment"] = await page.js("location.hash")
            await page.screenshot(screens / "list-failed.png")
            await choose(page, "f-state", "")
            await page.js("document.querySelector('#rows tr.item[data-item-id=\"s1\"]').click()")
            await page.until("!!document.querySelector('#d-verdicts')")
            found["verdicts"] = await page.js(
                """[...document.querySelectorAll('#d-verdicts tr')].map((tr) =>
                     [...tr.children].map((c) => c.textContent))"""
            )
            found["style"] = await page.js("document.getElementById('d-style').textContent")
            found["attempts"] = await page.js("document.querySelectorAll('#d-attempts tr[data-status]').length")
            found["seek"] = await page.js(
                f"""(async () => {{
                     {METADATA}
                     const seeked = new Promise((r) => video.addEventListener('seeked', r, {{once: true}}));
                     video.currentTime = video.duration / 2;
                     await seeked;
                     return {{time: video.currentTime, duration: video.duration, error: video.error && video.error.code,
                             seekable: video.seekable.length ? video.seekable.end(0) : 0}};
                   }})()"""
            )
            await page.screenshot(screens / "item-verdicts.png")
            await page.key("f", "KeyF", 70)  # next failed
            await page.until("document.getElementById('detail').dataset.itemId === 's2'")
            found["after_f"] = await page.js("document.querySelector('tr.item.current').dataset.itemId")
            await page.key("j", "KeyJ", 74)
            await page.until("document.getElementById('detail').dataset.itemId === 's3'")
            await page.key("k", "KeyK", 75)
            await page.until("document.getElementById('detail').dataset.itemId === 's2'")
            found["after_jk"] = await page.js("document.querySelector('tr.item.current').dataset.itemId")
            await page.js("document.querySelector('#rows tr.item[data-item-id=\"s1\"]').click()")
            await page.until(
                "document.getElementById('detail').dataset.itemId === 's1' && !!document.querySelector('#detail video')"
            )
            await page.key("p", "KeyP", 80)
            await page.until("!document.querySelector('#detail video').paused")
            await page.key("p", "KeyP", 80)
            found["paused"] = await page.until("document.querySelector('#detail video').paused")
        return found

    found = in_browser(tmp_path, body)
    assert found["ids"] == ["s1", "s2", "s3", "m1"]
    assert found["counts"] == ["4", "1", "1", "1", "1"]
    assert found["states"] == ["scored", "failed", "unscored", "not run"]
    assert found["failed_ids"] == ["s2"] and found["failed_matched"] == "1"
    assert "state=failed" in found["fragment"]
    header, *criteria, foot = found["verdicts"]
    assert header[3:] == ["A", "B", "panel"]
    missed = ["met", "missed", "missed"]
    assert [row[3:] for row in criteria] == [["met", "met", "met"], missed, missed]
    assert foot[3].startswith("1.000") and foot[4] == "0.000 (tier 1)" and foot[5] == "gated at tier 1"
    assert "5 of 7 met" in found["style"]
    assert found["attempts"] == 1
    seek = found["seek"]
    assert seek["error"] is None and seek["duration"] > 0 and abs(seek["time"] - seek["duration"] / 2) < 0.2
    assert seek["seekable"] > 0
    assert found["after_f"] == "s2" and found["after_jk"] == "s2" and found["paused"]


def test_side_by_side_marks_a_known_difference(native_run: Path, tmp_path: Path) -> None:
    other = tmp_path / "model-b" / "run"
    shutil.copytree(native_run, other)
    scores = json.loads((other / "scores.json").read_text())
    for item in scores["items"]:
        if item["key"] == "s1":
            item["score"] = 0.0
    (other / "scores.json").write_text(json.dumps(scores))
    screens = shots(tmp_path)

    async def body(page: DevTools) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with ViewServer([native_run, other], port=0) as server:
            await page.send("Page.navigate", url=server.url)
            await page.until(READY)
            await choose(page, "run-b", "1")
            found["all"] = await page.js(ROW_IDS)
            found["marked"] = await page.js(
                """[...document.querySelectorAll('#rows tr.item.differs')].map((tr) =>
                     [tr.dataset.itemId, tr.dataset.marks, tr.querySelectorAll('td.diff').length])"""
            )
            await page.screenshot(screens / "side-by-side.png")
            await choose(page, "f-pair", "a_right_b_wrong")
            found["a_right"] = await page.js(ROW_IDS)
            found["count"] = await page.js("document.getElementById('p-a_right_b_wrong').textContent")
            await choose(page, "f-pair", "b_right_a_wrong")
            found["b_right"] = await page.js(ROW_IDS)
            await choose(page, "f-pair", "")
            await page.js("document.querySelector('#rows tr.item[data-item-id=\"s1\"]').click()")
            await page.until("document.getElementById('detail').dataset.run === '0'")
            await page.key("s", "KeyS", 83)  # switch to B
            await page.until("document.getElementById('detail').dataset.run === '1'")
            found["b_state"] = await page.js("document.getElementById('d-state').textContent")
            await page.key("g", "KeyG", 71)  # the item in every run
            await page.until("document.querySelectorAll('#d-grid .cell').length === 2")
            found["grid"] = await page.js("[...document.querySelectorAll('#d-grid .cell p')].map((p) => p.textContent)")
            await page.screenshot(screens / "all-runs-of-one-item.png")
        return found

    found = in_browser(tmp_path, body)
    assert found["all"] == ["s1", "s2", "s3", "m1"]
    assert found["marked"] == [["s1", "a_right_b_wrong differ", 3]]
    assert found["a_right"] == ["s1"] and found["count"] == "1" and found["b_right"] == []
    assert "score 0.000" in found["b_state"]
    assert found["grid"] == ["score 0.500", "score 0.000"]


def test_a_hostile_run_renders_as_text(hostile_run: Path, tmp_path: Path) -> None:
    screens = shots(tmp_path)

    async def body(page: DevTools) -> dict[str, Any]:
        found: dict[str, Any] = {}
        with ViewServer([hostile_run], port=0) as server:
            await page.send("Page.navigate", url=server.url)
            await page.until(READY)
            await page.screenshot(screens / "hostile-run.png")
            found["status"] = await page.js("document.getElementById('status').textContent")
            found["id"] = await page.js("document.querySelector('#rows code.id')?.textContent")
            await page.js("document.querySelector('#rows tr.item').click()")
            await page.until("!!document.getElementById('d-reply')")
            found["reply"] = await page.js("document.getElementById('d-reply').textContent")
            found["question"] = await page.js("document.getElementById('d-question').textContent")
            found["injected"] = await page.js(f"document.querySelectorAll({json.dumps(INJECTED)}).length")
            found["pwned"] = await page.js("window.pwned === undefined ? null : window.pwned")
            await page.screenshot(screens / "hostile-run.png")
        return found

    found = in_browser(tmp_path, body)
    assert found["id"] == f"{HOSTILE_ID}/task0"
    assert found["injected"] == 0 and found["pwned"] is None
    assert "<script>window.pwned=3</script>" in found["reply"] and "<b>bold</b>" in found["reply"]
    assert "\x1b" not in found["reply"] and "\u241b" in found["reply"] and "\u2400" in found["reply"]  # visible
    assert "<script>window.pwned=2</script>" in found["question"] and "\u2407" in found["question"]


def test_the_static_export_opens_from_disk(native_run: Path, worldsense_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    written = export_viewer([native_run, worldsense_run], out)
    assert written.runs == 2 and written.items == 7 and written.index == out / "index.html"
    data = (out / "data" / "runs.js").read_text()
    assert data.startswith("window.OMNIVCHAT_VIEW = ") and data.isascii()
    again = export_viewer([native_run], out)  # an earlier export may be replaced
    assert again.runs == 1
    export_viewer([native_run, worldsense_run], out)
    screens = shots(tmp_path)

    async def body(page: DevTools) -> dict[str, Any]:
        found: dict[str, Any] = {}
        await page.send("Page.navigate", url=(out / "index.html").as_uri())
        await page.until(READY)
        found["ids"] = await page.js(ROW_IDS)
        await choose(page, "f-state", "unscored")
        found["unscored"] = await page.js(ROW_IDS)
        await choose(page, "f-state", "")
        await page.js("document.querySelector('#rows tr.item[data-item-id=\"s1\"]').click()")
        await page.until("!!document.querySelector('#d-verdicts')")
        found["judges"] = await page.js(
            "[...document.querySelectorAll('#d-verdicts tr:first-child th')].map((t) => t.textContent)"
        )
        found["video"] = await page.js(
            f"""(async () => {{ {METADATA}
                 return {{duration: video.duration, error: video.error && video.error.code}}; }})()"""
        )
        await choose(page, "run-a", "1")
        found["mc"] = await page.js(ROW_IDS)
        await page.screenshot(screens / "static-export.png")
        return found

    found = in_browser(tmp_path, body)
    assert found["ids"] == ["s1", "s2", "s3", "m1"] and found["unscored"] == ["s3"]
    assert found["judges"][3:] == ["A", "B", "panel"]
    assert found["video"]["error"] is None and found["video"]["duration"] > 0
    assert found["mc"] == ["vidA/task0", "vidA/task1", "vidB/task0"]


def test_a_report_link_opens_its_filter_and_item(native_run: Path, tmp_path: Path) -> None:
    from omnivchat.report import viewer_href

    link = viewer_href("run", state="failed")
    assert link.startswith("http://127.0.0.1:8766/#")

    async def body(page: DevTools) -> dict[str, Any]:
        with ViewServer([native_run], port=0) as server:
            fragment = link.split("#", 1)[1] + "&task=candidate&id=s2"
            await page.send("Page.navigate", url=f"{server.url}#{fragment}")
            await page.until(READY)
            await page.until("document.getElementById('detail').dataset.itemId === 's2'")
            return {
                "ids": await page.js(ROW_IDS),
                "state": await page.js("document.getElementById('f-state').value"),
                "matched": await page.js("document.getElementById('n-matched').textContent"),
            }

    found = in_browser(tmp_path, body)
    assert found == {"ids": ["s2"], "state": "failed", "matched": "1"}
