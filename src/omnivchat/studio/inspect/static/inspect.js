// The inspection page (omnivchat studio inspect): lists every instance of a bench, plays its clips, and records
// accept / reject decisions through POST /api/decisions. All bench text goes in through textContent, never as HTML.
"use strict";

const state = {
  instances: [],     // from GET /api/instances, in instances.jsonl order
  decisions: {},     // id -> latest decision, from GET /api/decisions
  cards: new Map(),  // id -> its <article>
  current: -1,       // index into instances of the instance the keys act on
};

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child !== null && child !== undefined && child !== false) {
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
  }
  return node;
}

function say(message, isError) {
  const status = document.getElementById("status");
  status.textContent = message;
  status.classList.toggle("error", Boolean(isError));
}

async function api(path, options) {
  const response = await fetch(path, options);
  let body = null;
  try {
    body = await response.json();
  } catch (_) {
    body = null;
  }
  if (!response.ok) {
    throw new Error((body && body.error) || `HTTP ${response.status}`);
  }
  return body;
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering

function field(list, label, value) {
  if (value === null || value === undefined || value === "") return;
  list.append(el("dt", { text: label }), el("dd", { text: String(value) }));
}

function turnView(instance, turn) {
  const total = instance.turns.length;
  const section = el("section", { class: "turn" });
  section.append(el("h3", { text: total > 1 ? `Turn ${turn.number} of ${total}` : "Clip" }));
  if (turn.clip) {
    section.append(el("video", { src: turn.clip, controls: true, preload: "none", "data-turn": turn.number }));
  } else {
    section.append(el("p", { class: "missing", text: `${turn.video}: not under media/, so not served here` }));
  }
  const list = el("dl");
  field(list, "Script", turn.question);
  field(list, "Heard", turn.transcript !== turn.question ? turn.transcript : null);
  field(list, "Caption", turn.caption);
  field(list, "Typed text", turn.text);
  field(list, "Length", turn.duration_s ? `${turn.duration_s} s` : null);
  field(list, "Reference reply (history)", turn.reply);
  if (list.childElementCount) section.append(list);
  return section;
}

function traceView(instance) {
  const details = el("details", { class: "trace" }, el("summary", { text: "Studio trace, module by module" }));
  let loaded = false;
  details.addEventListener("toggle", async () => {
    if (!details.open || loaded) return;
    loaded = true;
    try {
      const trace = await api(instance.trace);
      const table = el("table", { class: "trace" });
      table.append(el("tr", {}, ...["module", "name", "turn", "decision", "what happened"].map((h) => el("th", { text: h }))));
      for (const step of trace.steps) {
        table.append(el("tr", {}, ...[step.module, step.name, step.turn, step.decision, step.summary].map((c) => el("td", { text: c }))));
      }
      details.append(el("p", { text: `status: ${trace.status}` }), table);
    } catch (err) {
      details.append(el("p", { class: "missing", text: `trace: ${err.message}` }));
    }
  });
  return details;
}

function card(instance, index) {
  const article = el("article", {
    class: "instance",
    id: `instance-${index}`,
    "data-instance-id": instance.id,
    "data-index": index,
    tabindex: -1,
  });
  const title = el("h2", {}, el("code", { class: "id", text: instance.id }));
  const tags = `${instance.subcategory_path} (${instance.subcategory_name}) · ${instance.language} · ${instance.source}`
    + (instance.line ? ` · instances.jsonl:${instance.line}` : "");
  article.append(el("header", {}, title, el("span", { class: "tag", text: tags }), el("span", { class: "decision" })));

  const turns = el("div", { class: "turns" });
  for (const turn of instance.turns) turns.append(turnView(instance, turn));
  article.append(turns);

  article.append(el("h3", { text: "Reference reply" }), el("p", { class: "reference", text: instance.reference }));
  const rubric = el("ol", { class: "rubric" });
  for (const criterion of instance.rubric) {
    rubric.append(el("li", {}, el("span", { class: "tier", text: `tier ${criterion.tier}` }), criterion.text));
  }
  article.append(el("h3", { text: "Rubric" }), rubric);

  if (instance.notes.length) {
    const notes = el("dl");
    for (const [label, value] of instance.notes) field(notes, label, value);
    article.append(el("details", { class: "notes" }, el("summary", { text: "How it was staged" }), notes));
  }
  if (instance.trace) article.append(traceView(instance));

  const reason = el("input", {
    class: "reason",
    type: "text",
    maxlength: 2000,
    placeholder: "reason (needed to reject; Enter rejects)",
    "aria-label": `reason for ${instance.id}`,
  });
  const form = el(
    "form",
    { class: "decide", onsubmit: (event) => { event.preventDefault(); decide(index, "reject"); } },
    reason,
    el("button", { type: "button", class: "accept", text: "Accept (a)", onclick: () => decide(index, "accept") }),
    el("button", { type: "button", class: "reject", text: "Reject (r)", onclick: () => decide(index, "reject") }),
  );
  article.append(form);
  article.addEventListener("focusin", () => select(index, false));
  article.addEventListener("click", () => select(index, false));
  return article;
}

function showDecision(id) {
  const article = state.cards.get(id);
  const decision = state.decisions[id];
  const badge = article.querySelector(".decision");
  article.classList.remove("accept", "reject");
  badge.className = "decision";
  if (!decision) {
    badge.classList.add("undecided");
    badge.textContent = "undecided";
    badge.removeAttribute("title");
    return;
  }
  article.classList.add(decision.decision);
  badge.classList.add(decision.decision);
  const word = decision.decision === "accept" ? "accepted" : "rejected";
  badge.textContent = decision.reason ? `${word}: ${decision.reason}` : word;
  badge.title = decision.time ? `decided ${decision.time}` : "";
  const reason = article.querySelector("input.reason");
  if (document.activeElement !== reason) reason.value = decision.reason || "";
}

function showCounts(counts) {
  for (const name of ["accepted", "rejected", "undecided", "total"]) {
    document.getElementById(`n-${name}`).textContent = String(counts[name]);
  }
  applyFilter();
}

function applyFilter() {
  const filter = document.getElementById("filter").value;
  for (const instance of state.instances) {
    const decision = state.decisions[instance.id];
    const kind = decision ? decision.decision : "undecided";
    state.cards.get(instance.id).hidden = !(filter === "all" || filter === kind);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Acting

function currentCard() {
  const instance = state.instances[state.current];
  return instance ? state.cards.get(instance.id) : null;
}

function select(index, scroll) {
  if (index < 0 || index >= state.instances.length) return;
  const previous = currentCard();
  if (previous) previous.classList.remove("current");
  state.current = index;
  const article = currentCard();
  article.classList.add("current");
  if (scroll) {
    article.scrollIntoView({ block: "start", behavior: "auto" });
    window.scrollBy(0, -document.getElementById("top").offsetHeight - 8);
    article.focus({ preventScroll: true });
  }
}

function move(step, onlyUndecided) {
  let index = state.current;
  for (let n = 0; n < state.instances.length; n++) {
    index += step;
    if (index < 0 || index >= state.instances.length) return;
    const instance = state.instances[index];
    if (state.cards.get(instance.id).hidden) continue;
    if (onlyUndecided && state.decisions[instance.id]) continue;
    select(index, true);
    return;
  }
}

async function decide(index, decision) {
  const instance = state.instances[index];
  const article = state.cards.get(instance.id);
  const input = article.querySelector("input.reason");
  const reason = input.value.trim();
  select(index, false);
  if (decision === "reject" && !reason) {
    say(`${instance.id}: a reject needs a reason; type it, then press Enter`, true);
    input.focus();
    return;
  }
  const buttons = article.querySelectorAll("button");
  buttons.forEach((b) => { b.disabled = true; });
  try {
    const body = await api("/api/decisions", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ id: instance.id, decision, reason }),
    });
    state.decisions[instance.id] = body.decision;
    showDecision(instance.id);
    showCounts(body.counts);
    say(`${instance.id}: ${decision === "accept" ? "accepted" : "rejected"} (saved)`, false);
    input.blur();
    move(1, false);
  } catch (err) {
    say(`${instance.id}: not saved: ${err.message}`, true);
  } finally {
    buttons.forEach((b) => { b.disabled = false; });
  }
}

function togglePlay() {
  const article = currentCard();
  if (!article) return;
  const videos = [...article.querySelectorAll("video")];
  const playing = videos.find((v) => !v.paused && !v.ended);
  if (playing) {
    playing.pause();
    return;
  }
  const next = videos.find((v) => !v.ended) || videos[0];
  if (next) next.play().catch((err) => say(`cannot play: ${err.message}`, true));
}

function onKey(event) {
  if (event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement) {
    if (event.key === "Escape") {
      target.blur();
      const article = currentCard();
      if (article) article.focus({ preventScroll: true });
    } else if (event.key === "Enter" && target.classList.contains("reason")) {
      event.preventDefault();  // the one way Enter rejects (no second, implicit form submission)
      decide(Number(target.closest("article").dataset.index), "reject");
    }
    return;  // other keys type into the field
  }
  const keys = {
    j: () => move(1, false),
    k: () => move(-1, false),
    u: () => move(1, true),
    p: togglePlay,
    a: () => { if (state.current >= 0) decide(state.current, "accept"); },
    r: () => { const a = currentCard(); if (a) a.querySelector("input.reason").focus(); },
  };
  const action = keys[event.key];
  if (action) {
    event.preventDefault();
    action();
  }
}

async function main() {
  const list = document.getElementById("instances");
  try {
    const [bench, decisions] = await Promise.all([api("/api/instances"), api("/api/decisions")]);
    state.instances = bench.instances;
    state.decisions = decisions.decisions;
    document.getElementById("bench-name").textContent = `${bench.bench.name} v${bench.bench.version}`;
    document.title = `inspection: ${bench.bench.name}`;
    list.replaceChildren(...bench.instances.map((instance, index) => {
      const article = card(instance, index);
      state.cards.set(instance.id, article);
      return article;
    }));
    for (const instance of bench.instances) showDecision(instance.id);
    showCounts(decisions.counts);
    if (state.instances.length) select(0, false);
    say(`${state.instances.length} instances; decisions are saved to ${decisions.file} as you make them`, false);
  } catch (err) {
    list.replaceChildren(el("p", { class: "missing", text: `cannot load the bench: ${err.message}` }));
    say(err.message, true);
  }
  list.removeAttribute("aria-busy");
  document.body.dataset.ready = "true";
}

document.addEventListener("keydown", onKey);
document.getElementById("filter").addEventListener("change", applyFilter);
main();
