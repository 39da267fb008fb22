// The run viewer page. Every text from a run is set with textContent (never as HTML), with control characters
// shown as visible symbols. Served: the JSON API does filters, sorting and paging. Exported (--export): the same
// page reads window.OMNIVCHAT_VIEW (written beside it) and filters in the page.
"use strict";

const STATES = ["scored", "unscored", "failed", "not run"];
const RIGHT_AT = 0.5;
const PAGE = 100;
const EXPORTED = window.OMNIVCHAT_VIEW || null;
const state = {
  runs: [], a: 0, b: null, offset: 0, rows: [], current: -1, detail: null, showB: false, grid: false,
  filters: { state: "", below: "", disagree: false, group: "", language: "", q: "", sort: "order", desc: false, pair: "" },
};

// ---------------------------------------------------------------------------------------------- helpers

function visible(value) {
  if (value === null || value === undefined) return "";
  return String(value).replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g,
    (c) => String.fromCharCode(c === "\u007f" ? 0x2421 : 0x2400 + c.charCodeAt(0)));
}

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(visible(child)));
  }
  return node;
}

function short(text, n) { const t = String(text); return t.length > n ? t.slice(0, n - 1) + "…" : t; }
function fmt(score) { return score === null || score === undefined ? "—" : Number(score).toFixed(3); }
function usd(value) { return value === null || value === undefined ? "—" : "$" + Number(value).toFixed(4); }
function $(id) { return document.getElementById(id); }

function status(text, error) {
  $("status").textContent = visible(text);
  $("status").className = error ? "error" : "";
}

async function api(path, params) {
  const url = path + (params ? "?" + new URLSearchParams(params).toString() : "");
  const response = await fetch(url, { cache: "no-store" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// ------------------------------------------------------------------ the exported viewer's data (no server)

function matches(row, f) {
  if (f.state && row.state !== f.state) return false;
  if (f.below !== "" && (row.score === null || row.score >= Number(f.below))) return false;
  if (f.disagree && !row.disagree) return false;
  if (f.group && row.group !== f.group) return false;
  if (f.language && row.language !== f.language) return false;
  return !f.q || row.search.includes(f.q.toLowerCase());
}

function countStates(rows) {
  const out = Object.fromEntries(STATES.map((s) => [s, 0]));
  for (const r of rows) out[r.state] += 1;
  out.total = rows.length;
  return out;
}

function localItems(run, f, offset) {
  const all = EXPORTED.rows[run].map((r, index) => ({ ...r, index }));
  let chosen = all.filter((r) => matches(r, f));
  const keys = { id: "id", score: "score", group: "group", language: "language", reply_len: "reply_len",
    cost: "cost_usd", attempts: "attempts", state: "state" };
  if (f.sort !== "order") {
    const key = keys[f.sort];
    const value = (r) => (key === "state" ? STATES.indexOf(r.state) : r[key]);
    const known = chosen.filter((r) => value(r) !== null && value(r) !== undefined);
    const unknown = chosen.filter((r) => value(r) === null || value(r) === undefined);
    known.sort((x, y) => (value(x) < value(y) ? -1 : value(x) > value(y) ? 1 : 0) * (f.desc ? -1 : 1));
    chosen = known.concat(unknown);
  } else if (f.desc) chosen = chosen.slice().reverse();
  return {
    run: EXPORTED.runs[run], counts: countStates(all), matched: countStates(chosen), offset,
    rows: chosen.slice(offset, offset + PAGE),
    groups: [...new Set(all.map((r) => r.group).filter(Boolean))].sort(),
    languages: [...new Set(all.map((r) => r.language).filter(Boolean))].sort(),
  };
}

function localDetail(run, index) {
  return new Promise((resolve, reject) => {
    const key = run + "/" + index;
    if (EXPORTED.items[key]) { resolve(EXPORTED.items[key]); return; }
    const script = document.createElement("script");
    script.src = "data/item-" + run + "-" + index + ".js";
    script.onload = () => (EXPORTED.items[key] ? resolve(EXPORTED.items[key]) : reject(new Error("no item " + key)));
    script.onerror = () => reject(new Error("cannot read " + script.src));
    document.head.append(script);
  });
}
window.omnivchatViewItem = (run, index, detail) => { EXPORTED.items[run + "/" + index] = detail; };

function right(side) { return side && side.score !== null ? side.score >= RIGHT_AT : null; }

function localPairs(f) {
  const a = EXPORTED.rows[state.a], b = EXPORTED.rows[state.b];
  const byB = new Map(b.map((r) => [r.task + "\u0000" + r.id, r]));
  const byA = new Map(a.map((r) => [r.task + "\u0000" + r.id, r]));
  const keys = [...byA.keys(), ...[...byB.keys()].filter((k) => !byA.has(k))];
  const counts = { all: 0, a_right_b_wrong: 0, b_right_a_wrong: 0, differ: 0, only_a: 0, only_b: 0 };
  const chosen = [];
  for (const key of keys) {
    const x = byA.get(key) || null, y = byB.get(key) || null;
    if (f.q && ![x, y].some((r) => r && r.search.includes(f.q.toLowerCase()))) continue;
    const marks = [];
    if (!x) marks.push("only_b");
    if (!y) marks.push("only_a");
    if (right(x) === true && right(y) === false) marks.push("a_right_b_wrong");
    if (right(y) === true && right(x) === false) marks.push("b_right_a_wrong");
    if (x && y && x.score !== null && y.score !== null && x.score !== y.score) marks.push("differ");
    counts.all += 1;
    for (const m of marks) counts[m] += 1;
    if (!f.pair || marks.includes(f.pair)) {
      const side = (r) => (r ? { state: r.state, why: r.why, score: r.score, right: right(r), reply: r.reply } : null);
      const diff = x && y && x.score !== null && y.score !== null ? y.score - x.score : null;
      chosen.push({ task: (x || y).task, id: (x || y).id, a: side(x), b: side(y), diff, marks: marks.sort() });
    }
  }
  return { counts, matched: chosen.length, rows: chosen.slice(state.offset, state.offset + PAGE) };
}

// --------------------------------------------------------------------------------------- the fragment

// #run=LABEL&b=LABEL&state=failed&group=AH&language=en&below=0.5&disagree=1&q=TEXT&sort=score&order=desc
// &pair=a_right_b_wrong&task=TASK&id=ID  (docs/viewer.md); a run is named by its label or its index.
function runByName(name) {
  if (name === null || name === "") return null;
  const found = state.runs.findIndex((r) => r.label === name);
  if (found >= 0) return found;
  return /^\d+$/.test(name) && Number(name) < state.runs.length ? Number(name) : null;
}

function readFragment() {
  const p = new URLSearchParams(location.hash.slice(1));
  const a = runByName(p.get("run"));
  if (a !== null) state.a = a;
  state.b = runByName(p.get("b"));
  const f = state.filters;
  f.state = p.get("state") || "";
  f.below = p.get("below") || "";
  f.disagree = p.get("disagree") === "1";
  f.group = p.get("group") || "";
  f.language = p.get("language") || "";
  f.q = p.get("q") || "";
  f.sort = p.get("sort") || "order";
  f.desc = p.get("order") === "desc";
  f.pair = p.get("pair") || "";
  state.wanted = p.get("id") !== null ? { task: p.get("task"), id: p.get("id") } : null;
}

function writeFragment() {
  const f = state.filters;
  const p = new URLSearchParams();
  p.set("run", state.runs[state.a] ? state.runs[state.a].label : String(state.a));
  if (state.b !== null) p.set("b", state.runs[state.b].label);
  for (const key of ["state", "below", "group", "language", "q", "pair"]) if (f[key]) p.set(key, f[key]);
  if (f.disagree) p.set("disagree", "1");
  if (f.sort !== "order") p.set("sort", f.sort);
  if (f.desc) p.set("order", "desc");
  const row = state.rows[state.current];
  if (row) { p.set("task", row.task); p.set("id", row.id); }
  history.replaceState(null, "", "#" + p.toString());
}

function syncControls() {
  const f = state.filters;
  $("run-a").value = String(state.a);
  $("run-b").value = state.b === null ? "" : String(state.b);
  $("f-state").value = f.state;
  $("f-below").value = f.below;
  $("f-disagree").checked = f.disagree;
  $("f-q").value = f.q;
  $("f-sort").value = f.sort;
  $("f-desc").checked = f.desc;
  $("f-pair").value = f.pair;
  $("pair-label").hidden = state.b === null;
}

function setOptions(select, values, chosen) {
  const keep = select.options[0];
  select.replaceChildren(keep, ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(chosen) ? chosen : "";
}

// ---------------------------------------------------------------------------------------------- the list

async function loadList() {
  const f = state.filters;
  try {
    if (state.b !== null) await loadPairs();
    else {
      const params = { offset: state.offset, limit: PAGE, sort: f.sort, order: f.desc ? "desc" : "asc" };
      for (const key of ["state", "below", "group", "language"]) if (f[key] !== "") params[key] = f[key];
      if (f.disagree) params.disagree = "1";
      if (f.q) params.q = f.q;
      const body = EXPORTED ? localItems(state.a, f, state.offset) : await api(`api/runs/${state.a}/items`, params);
      renderList(body);
    }
    status("");
  } catch (err) {
    status(err.message, true);
  }
  document.body.dataset.ready = "true";
}

function countsBar(counts, matched) {
  const parts = [el("span", { class: "count total" }, "items", el("b", { id: "n-total" }, counts.total))];
  for (const s of STATES) {
    const cls = "count " + s.replace(" ", "");
    parts.push(el("span", { class: cls }, s, el("b", { id: "n-" + s.replace(" ", "-") }, counts[s])));
  }
  parts.push(el("span", { class: "count matched" }, "shown by the filter", el("b", { id: "n-matched" }, matched.total)));
  for (const s of STATES) if (matched[s]) parts.push(el("span", { class: "count" }, `${s} ${matched[s]}`));
  $("counts").replaceChildren(...parts);
}

function renderList(body) {
  countsBar(body.counts, body.matched);
  setOptions($("f-group"), body.groups, state.filters.group);
  setOptions($("f-language"), body.languages, state.filters.language);
  const info = body.run || {};
  $("run-info").textContent = visible(`${info.benchmark || "?"} · ${info.model || "?"} · ${info.condition || "both"}` +
    (info.stale ? ` · ${info.stale}` : info.scored ? "" : " · not scored yet") +
    (info.unnamed_not_run ? ` · ${info.unnamed_not_run} more declared item(s) never run (named once scored)` : "") +
    (info.partial ? " · reading replies, attempts and costs…" : ""));
  state.partial = Boolean(info.partial);
  $("head").replaceChildren(...["id", "group", "lang", "state", "score", "reply", "cost", "tries"].map((h) => el("th", {}, h)));
  state.rows = body.rows;
  $("rows").replaceChildren(...body.rows.map((r, n) => el("tr", {
    class: "item", dataset: { index: String(n), state: r.state, itemId: r.id }, onclick: () => openItem(n),
  },
  el("td", {}, el("code", { class: "id" }, r.id)),
  el("td", {}, r.group), el("td", {}, r.language),
  el("td", { class: "state-" + r.state.replace(" ", "-"), title: r.why }, r.state === "failed" || r.state === "unscored" ? short(`${r.state}: ${r.why}`, 90) : r.state),
  el("td", { class: "num score" }, fmt(r.score), r.disagree ? el("span", { class: "mark", title: "judges disagree" }, "≠") : null),
  el("td", { class: "num" }, r.reply_len === null ? "—" : r.reply_len),
  el("td", { class: "num" }, usd(r.cost_usd)), el("td", { class: "num" }, r.attempts))));
  pager(body.matched.total);
  pickWanted();
}

function pager(total) {
  const last = Math.min(state.offset + PAGE, total);
  $("page").textContent = total ? `${state.offset + 1}–${last} of ${total}` : "no item matches";
  $("prev").disabled = state.offset === 0;
  $("next").disabled = last >= total;
}

async function loadPairs() {
  const f = state.filters;
  const params = { a: state.a, b: state.b, offset: state.offset, limit: PAGE };
  if (f.pair) params.filter = f.pair;
  if (f.q) params.q = f.q;
  const body = EXPORTED ? localPairs(f) : await api("api/compare", params);
  const c = body.counts;
  $("counts").replaceChildren(...[["all", "items"], ["a_right_b_wrong", "A right, B wrong"], ["b_right_a_wrong", "B right, A wrong"],
    ["differ", "scores differ"], ["only_a", "only in A"], ["only_b", "only in B"]].map(([k, label]) =>
    el("span", { class: "count" }, label, el("b", { id: "p-" + k }, c[k]))),
  el("span", { class: "count matched" }, "shown", el("b", { id: "n-matched" }, body.matched)));
  $("run-info").textContent = visible(`A: ${state.runs[state.a].label} · B: ${state.runs[state.b].label} · right = score ≥ ${RIGHT_AT}`);
  $("head").replaceChildren(...["id", "A score", "B score", "B − A", "A reply", "B reply"].map((h) => el("th", {}, h)));
  state.rows = body.rows;
  const side = (s) => (s ? (s.score === null ? short(`${s.state}: ${s.why}`, 60) : fmt(s.score)) : "absent");
  $("rows").replaceChildren(...body.rows.map((r, n) => {
    const differs = r.marks.length > 0;
    return el("tr", { class: "item pair" + (differs ? " differs" : ""), dataset: { index: String(n), itemId: r.id, marks: r.marks.join(" ") },
      onclick: () => openItem(n) },
    el("td", {}, el("code", { class: "id" }, r.id), ...r.marks.map((m) => el("span", { class: "mark" }, m.replaceAll("_", " ")))),
    el("td", { class: "num" + (differs ? " diff" : "") }, side(r.a)), el("td", { class: "num" + (differs ? " diff" : "") }, side(r.b)),
    el("td", { class: "num" + (r.diff ? " diff" : "") }, r.diff === null ? "—" : (r.diff > 0 ? "+" : "") + r.diff.toFixed(3)),
    el("td", {}, r.a && r.a.reply !== null ? short(r.a.reply, 160) : "—"), el("td", {}, r.b && r.b.reply !== null ? short(r.b.reply, 160) : "—"));
  }));
  pager(body.matched);
  pickWanted();
}

function pickWanted() {
  if (state.wanted) {
    const at = state.rows.findIndex((r) => r.task === state.wanted.task && r.id === state.wanted.id);
    state.wanted = null;
    if (at >= 0) { openItem(at); return; }
  }
  if (state.current >= state.rows.length) state.current = -1;
}

// ---------------------------------------------------------------------------------------------- one item

async function fetchDetail(run, row) {
  if (EXPORTED) {
    const index = EXPORTED.rows[run].findIndex((r) => r.task === row.task && r.id === row.id);
    if (index < 0) return null;
    return localDetail(run, index);
  }
  try {
    return await api(`api/runs/${run}/item`, { task: row.task, id: row.id });
  } catch (err) {
    return { missing: err.message };
  }
}

async function openItem(n) {
  const row = state.rows[n];
  if (!row) return;
  state.current = n;
  for (const tr of document.querySelectorAll("tr.item")) tr.classList.toggle("current", tr.dataset.index === String(n));
  document.querySelector("tr.item.current")?.scrollIntoView({ block: "nearest" });
  writeFragment();
  const run = state.showB && state.b !== null ? state.b : state.a;
  const detail = await fetchDetail(run, row);
  if (state.current !== n) return;
  state.detail = detail;
  if (state.grid) await renderGrid(row);
  else renderDetail(detail, run);
  $("detail").dataset.itemId = row.id;
  $("detail").dataset.run = String(run);
}

function section(title, ...body) { return [el("h3", {}, title), ...body]; }

function renderDetail(d, run) {
  const box = $("detail");
  if (!d || d.missing) { box.replaceChildren(el("p", { class: "hint" }, d ? d.missing : "not in this run")); return; }
  const r = d.row;
  const label = state.runs[run] ? state.runs[run].label : String(run);
  const parts = [el("h2", {}, el("code", { class: "id" }, r.id), ` · ${label}` + (state.b !== null ? (run === state.a ? " (A)" : " (B)") : ""))];
  parts.push(el("p", { class: "state-" + r.state.replace(" ", "-"), id: "d-state" },
    `${r.state}` + (r.state === "scored" ? ` · score ${fmt(r.score)}` : ` · ${r.why}`) + ` · ${r.group} ${r.language}`));
  if (d.clips.length) {
    parts.push(...section("Clips as sent", ...d.clips.map((c) => el("div", { class: "clip" },
      el("div", { class: "note" }, `turn ${c.turn}: ${c.label} — ${c.note}`),
      el("video", { src: c.url, controls: true, preload: "metadata", dataset: { turn: String(c.turn) } })))));
  } else parts.push(el("p", { class: "note" }, "No clip located for this item."));
  const n = d.native;
  if (n && n.turns) {
    parts.push(...section("Turns", ...n.turns.map((t) => el("div", {},
      el("div", { class: "note" }, `turn ${t.turn}`),
      t.question ? el("div", { class: "text" }, "question: ", t.question) : null,
      t.transcript ? el("div", { class: "text" }, "transcript: ", t.transcript) : null,
      t.text ? el("div", { class: "text" }, "typed: ", t.text) : null,
      t.reference ? el("div", { class: "text" }, "reference reply: ", t.reference) : null))));
  } else if (d.question) parts.push(...section("Question as sent", el("div", { class: "text", id: "d-question" }, d.question)));
  if (n && n.reference) parts.push(...section("Reference", el("div", { class: "text" }, n.reference)));
  if (n && n.error) parts.push(el("p", { class: "note" }, n.error));
  parts.push(...section("Reply" + (d.redacted ? " (redacted: it held the run's key)" : ""),
    d.reply === null ? el("p", { class: "note" }, d.error || "no reply") : el("div", { class: "text", id: "d-reply" }, d.reply)));
  if (d.spoken) {
    parts.push(el("audio", { src: d.spoken.url, controls: true, preload: "metadata" }));
    if (d.spoken.server_transcript) parts.push(el("div", { class: "text" }, "server transcript: ", d.spoken.server_transcript));
    for (const t of d.spoken.transcripts) parts.push(el("div", { class: "text" }, `${t.asr}: `, t.text === null ? `failed: ${t.error}` : t.text));
  }
  if (d.choice) {
    const c = d.choice;
    parts.push(...section("Multiple choice", el("table", { id: "d-choice" },
      el("tr", {}, el("th", {}, "gold"), el("td", {}, c.gold)),
      el("tr", {}, el("th", {}, "parsed (strict, the headline)"), el("td", {}, c.strict === null || c.strict === undefined ? "unparsed" : c.strict)),
      el("tr", {}, el("th", {}, "parsed (lenient)"), el("td", {}, c.lenient === null || c.lenient === undefined ? "unparsed" : c.lenient)),
      ...(c.options || []).map((o, i) => el("tr", {}, el("th", {}, (c.letters || "ABCDEFGHIJ")[i] || String(i)), el("td", {}, o))))));
  }
  if (n && n.criteria) parts.push(...verdicts(n));
  if (d.score) parts.push(el("p", { class: "note" }, `score reason: ${d.score.reason}`));
  parts.push(...section(`Attempts (${d.attempts.length})`, attemptsTable(d.attempts)));
  if (state.runs.length > 1) parts.push(el("p", { class: "note" }, "g shows this item in every run (the conditions of an ablation grid)."));
  box.replaceChildren(...parts);
}

function verdicts(n) {
  const judges = Object.keys(n.judges);
  const head = el("tr", {}, el("th", {}, "#"), el("th", {}, "tier"), el("th", {}, "criterion"),
    ...judges.map((j) => el("th", {}, j + (n.judges[j].in_panel ? "" : " (not in panel)"))), el("th", {}, "panel"));
  const rows = n.criteria.map((c) => el("tr", { dataset: { criterion: String(c.number) } },
    el("td", {}, c.number), el("td", {}, c.tier), el("td", {}, c.text),
    ...judges.map((j) => {
      const hits = n.judges[j].hits;
      if (hits === null) return el("td", { class: "missed" }, "—");
      return hits.includes(c.number) ? el("td", { class: "met" }, "met") : el("td", { class: "missed" }, "missed");
    }),
    n.panel_hits === null ? el("td", {}, "—") : el("td", { class: n.panel_hits.includes(c.number) ? "met" : "missed" },
      n.panel_hits.includes(c.number) ? "met" : "missed")));
  const foot = el("tr", {}, el("th", {}, ""), el("th", {}, ""), el("th", {}, "Eq. 1 score (gated at tier)"),
    ...judges.map((j) => { const v = n.judges[j]; return el("td", { class: "judge-score" }, v.hits === null ? v.why : `${fmt(v.score)}` + (v.gated_at === null ? " (all met)" : ` (tier ${v.gated_at})`)); }),
    el("td", {}, n.panel_hits === null ? "—" : (n.panel_gated_at === null ? "all met" : `gated at tier ${n.panel_gated_at}`)));
  const out = section(`Rubric verdicts (panel ${n.panel.join(", ") || "?"}, ${n.aggregate})`, el("table", { id: "d-verdicts" }, head, ...rows, foot));
  if (n.style) {
    const met = n.style.met;
    out.push(el("p", { id: "d-style" }, `style checklist by ${n.style.judge}: ` +
      (met === null ? "no usable verdict" : `${met.length} of ${n.style.of} met (${met.join(", ") || "none"})`)));
  }
  return out;
}

function attemptsTable(attempts) {
  if (!attempts.length) return el("p", { class: "note" }, "no attempt was made");
  return el("table", { id: "d-attempts" },
    el("tr", {}, ...["#", "status", "error", "replica", "latency", "tokens", "cost"].map((h) => el("th", {}, h))),
    ...attempts.map((a) => el("tr", { dataset: { status: a.status } },
      el("td", {}, a.number), el("td", {}, a.status + (a.http_status ? ` (HTTP ${a.http_status})` : "")),
      el("td", {}, a.error_kind ? `${a.error_kind}: ${a.error || ""}` : ""), el("td", {}, a.replica || ""),
      el("td", { class: "num" }, a.latency_s === null ? "—" : `${a.latency_s.toFixed(2)} s`),
      el("td", {}, a.tokens ? JSON.stringify(a.tokens) : "—"),
      el("td", { class: "num" }, a.cost_usd === null || a.cost_usd === undefined ? (a.cost_note || "unknown") : usd(a.cost_usd)))));
}

async function renderGrid(row) {
  const cells = await Promise.all(state.runs.map(async (info, run) => {
    const d = await fetchDetail(run, row);
    if (!d || d.missing) return el("div", { class: "cell", dataset: { run: String(run) } }, el("b", {}, info.label), el("p", { class: "note" }, "not in this run"));
    const r = d.row;
    return el("div", { class: "cell", dataset: { run: String(run) } }, el("b", {}, info.label),
      el("p", {}, r.state === "scored" ? `score ${fmt(r.score)}` : `${r.state}: ${r.why}`),
      ...d.clips.map((c) => el("video", { src: c.url, controls: true, preload: "metadata" })),
      el("div", { class: "text" }, d.reply === null ? (d.error || "no reply") : d.reply));
  }));
  $("detail").replaceChildren(el("h2", {}, el("code", { class: "id" }, row.id), " in every run"), el("div", { class: "grid", id: "d-grid" }, ...cells));
}

// ---------------------------------------------------------------------------------------------- controls

function changed() { state.offset = 0; state.current = -1; writeFragment(); loadList(); }

function bind() {
  const f = state.filters;
  $("run-a").addEventListener("change", (e) => { state.a = Number(e.target.value); changed(); });
  $("run-b").addEventListener("change", (e) => { state.b = e.target.value === "" ? null : Number(e.target.value); state.showB = false; syncControls(); changed(); });
  $("f-state").addEventListener("change", (e) => { f.state = e.target.value; changed(); });
  $("f-below").addEventListener("change", (e) => { f.below = e.target.value; changed(); });
  $("f-disagree").addEventListener("change", (e) => { f.disagree = e.target.checked; changed(); });
  $("f-group").addEventListener("change", (e) => { f.group = e.target.value; changed(); });
  $("f-language").addEventListener("change", (e) => { f.language = e.target.value; changed(); });
  $("f-q").addEventListener("change", (e) => { f.q = e.target.value; changed(); });
  $("f-sort").addEventListener("change", (e) => { f.sort = e.target.value; changed(); });
  $("f-desc").addEventListener("change", (e) => { f.desc = e.target.checked; changed(); });
  $("f-pair").addEventListener("change", (e) => { f.pair = e.target.value; changed(); });
  $("prev").addEventListener("click", () => { state.offset = Math.max(0, state.offset - PAGE); state.current = -1; loadList(); });
  $("next").addEventListener("click", () => { state.offset += PAGE; state.current = -1; loadList(); });
  window.addEventListener("hashchange", () => { readFragment(); syncControls(); state.offset = 0; loadList(); });
  document.addEventListener("keydown", onKey);
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement) return;
  const key = event.key;
  if (key === "j") openItem(Math.min(state.current + 1, state.rows.length - 1));
  else if (key === "k") openItem(Math.max(state.current - 1, 0));
  else if (key === "f") {
    const next = state.rows.findIndex((r, n) => n > state.current && (r.state === "failed" || (r.a && r.a.state === "failed") || (r.b && r.b.state === "failed")));
    if (next >= 0) openItem(next); else status("no failed item after this one on this page");
  } else if (key === "p") {
    const video = document.querySelector("#detail video");
    if (video) { if (video.paused) video.play(); else video.pause(); }
  } else if (key === "s") {
    if (state.b === null) { status("switch A/B needs a run B"); return; }
    state.showB = !state.showB;
    if (state.current >= 0) openItem(state.current);
  } else if (key === "g") {
    state.grid = !state.grid;
    if (state.current >= 0) openItem(state.current);
  } else return;
  event.preventDefault();
}

async function start() {
  try {
    state.runs = EXPORTED ? EXPORTED.runs : (await api("api/runs")).runs;
  } catch (err) {
    status(err.message, true);
    document.body.dataset.ready = "true";
    return;
  }
  const options = () => state.runs.map((r, n) => el("option", { value: String(n) }, `${r.label} (${r.benchmark || "?"}, ${r.items} items)`));
  $("run-a").replaceChildren(...options());
  $("run-b").replaceChildren(el("option", { value: "" }, "(none)"), ...options());
  readFragment();
  syncControls();
  bind();
  await loadList();
  if (!EXPORTED) poll();
}

function poll() {  // a run being written: its counts move; a large run's replies arrive after its first list
  setTimeout(async () => { await refreshCounts(); poll(); }, state.partial ? 1000 : 5000);
}

async function refreshCounts() {
  if (state.b !== null || document.hidden) return;
  try {
    const body = await api(`api/runs/${state.a}/items`, { limit: 1, state: state.filters.state });
    if (body.counts.total !== Number($("n-total").textContent) || body.counts.scored !== Number($("n-scored").textContent) ||
        Boolean(body.run.partial) !== Boolean(state.partial)) loadList();
  } catch (err) { status(err.message, true); }
}

document.addEventListener("DOMContentLoaded", start);
