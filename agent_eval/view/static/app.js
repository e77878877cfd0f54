"use strict";
// Every piece of run data goes in as text (textContent / text nodes), never as HTML.
const PAGE = 50;
let timer = null;
let routed = 0; // counts routes: a page's late callbacks check it is still shown

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  }
  return node;
}

async function api(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

const runPath = (id) => "/api/runs/" + id.split("/").map(encodeURIComponent).join("/");
const pct = (x) => (x == null ? "" : (100 * x).toFixed(1) + "%");
const num = (x, digits = 2) => (x == null ? "" : Number(x).toFixed(digits));
const interval = (a) => (a ? `${pct(a.value)} [${pct(a.low)}, ${pct(a.high)}]` : "");
const outcome = (r) => (r.unscored ? "unscored" : r.correct ? "correct" : "wrong");

function show(...nodes) {
  document.getElementById("app").replaceChildren(...nodes);
}

function table(id, headers, rows) {
  return el("table", { id }, el("thead", {}, el("tr", {}, ...headers)), el("tbody", {}, ...rows));
}

async function runsView() {
  const { runs } = await api("/api/runs");
  const headers = ["run", "agent", "model", "dataset", "attempts", "accuracy [95%]", "unscored",
    "status", "started"].map((h) => el("th", { text: h }));
  const rows = runs.map((r) => el("tr", { "data-run": r.id },
    el("td", {}, el("a", { href: "#/run/" + encodeURIComponent(r.id), text: r.id })),
    el("td", { text: r.agent ?? "" }), el("td", { text: r.model ?? "" }),
    el("td", { text: r.dataset ?? "" }), el("td", { text: r.attempts }),
    el("td", { text: interval(r.accuracy) }), el("td", { text: r.unscored }),
    el("td", { class: "status", text: r.status + (r.kind === "watch" ? " (watch)" : "") }),
    el("td", { text: r.started ?? "" })));
  show(el("h1", { text: "Runs" }), table("runs-table", headers, rows));
}

function headline(body) {
  const { run, summary, errors, workers } = body;
  const quality = (summary && summary.quality) || {};
  const stability = (summary && summary.stability) || {};
  const items = [["accuracy", interval(run.accuracy)], ["attempts", run.attempts],
    ["unscored", run.unscored], ["status", run.status]];
  for (const [k, v] of Object.entries(quality.pass_at_k || {})) items.push([`pass@${k}`, pct(v)]);
  for (const [k, v] of Object.entries(stability.pass_hat_k || {})) items.push([`pass^${k}`, pct(v)]);
  for (const [k, v] of Object.entries(errors)) items.push([`error ${k}`, v]);
  for (const [k, v] of Object.entries(workers)) items.push([`worker ${k}`, v]);
  return el("table", { id: "headline" },
    ...items.map(([k, v]) => el("tr", {}, el("th", { text: k }), el("td", { text: v }))));
}

async function runView(id, state) {
  const body = await api(runPath(id) + "/summary");
  const kinds = Object.keys(body.errors);
  const select = (elId, options, value) => el("select", { id: elId },
    ...options.map(([v, label]) => {
      const option = el("option", { value: v, text: label });
      option.selected = v === value;
      return option;
    }));
  const outcomeBox = select("filter-outcome", [["", "all"], ["correct", "correct"],
    ["wrong", "wrong"], ["unscored", "unscored"], ...kinds.map((k) => [k, k])], state.outcome);
  const workerBox = select("filter-worker",
    [["", "all workers"], ...Object.keys(body.workers).map((w) => [w, w])], state.worker);
  const search = el("input", { id: "search", type: "search", placeholder: "search question or answer" });
  search.value = state.q;
  const count = el("span", { id: "row-count" });
  const pager = el("span", { id: "pager" });
  const holder = el("div", { id: "rows" });
  const refresh = () => loadRows(id, state, holder, count, pager);
  outcomeBox.addEventListener("change", () => { state.outcome = outcomeBox.value; state.offset = 0; refresh(); });
  workerBox.addEventListener("change", () => { state.worker = workerBox.value; state.offset = 0; refresh(); });
  search.addEventListener("change", () => { state.q = search.value; state.offset = 0; refresh(); });
  state.refresh = refresh;
  show(el("h1", { text: id }), headline(body),
    el("div", { class: "controls" }, outcomeBox, workerBox, search, count, pager), holder);
  await refresh();
  const shown = routed;
  if (body.run.status === "running") timer = setInterval(async () => {
    const now = await api(runPath(id) + "/summary");
    // A poll answered after the user left this page must not touch the page now shown.
    if (shown !== routed) return;
    document.getElementById("headline").replaceWith(headline(now));
    await refresh();
    if (now.run.status !== "running") clearInterval(timer);
  }, 1000);
}

const COLUMNS = [["sample_id", "sample"], ["attempt", "attempt"], ["correct", "outcome"],
  ["reward", "reward"], ["error_kind", "error"], ["model_calls", "model calls"],
  ["tool_calls", "tool calls"], ["tokens", "tokens"], ["latency_s", "latency s"]];

async function loadRows(id, state, holder, count, pager) {
  const params = new URLSearchParams({ sort: state.sort, desc: state.desc ? "1" : "0",
    offset: state.offset, limit: PAGE });
  for (const key of ["outcome", "worker", "q"]) if (state[key]) params.set(key, state[key]);
  const page = await api(runPath(id) + "/rows?" + params);
  const headers = COLUMNS.map(([key, label]) => el("th", { "data-sort": key,
    text: label + (state.sort === key ? (state.desc ? " ▼" : " ▲") : ""),
    onclick: () => { state.desc = state.sort === key ? !state.desc : false; state.sort = key; state.refresh(); } }));
  headers.push(el("th", { text: "workers" }));
  const rows = page.rows.map((r) => el("tr", { "data-index": r.index, class: outcome(r) },
    el("td", {}, el("a", { href: `#/run/${encodeURIComponent(id)}/sample/${encodeURIComponent(r.sample_id)}`, text: r.sample_id })),
    el("td", { text: r.attempt }), el("td", { text: outcome(r) }), el("td", { text: num(r.reward) }),
    el("td", { text: r.error_kind ?? "" }), el("td", { text: r.model_calls }),
    el("td", { text: r.tool_calls }), el("td", { text: r.tokens }),
    el("td", { text: num(r.latency_s) }), el("td", { text: r.workers.join(", ") })));
  holder.replaceChildren(table("rows-table", headers, rows));
  count.textContent = `${page.total} attempts`;
  const last = Math.max(0, Math.ceil(page.total / PAGE) - 1);
  const go = (offset) => () => { state.offset = offset; state.refresh(); };
  pager.replaceChildren(
    el("button", { id: "page-prev", onclick: go(Math.max(0, state.offset - PAGE)) }, "‹ prev"),
    ` page ${Math.floor(state.offset / PAGE) + 1} of ${last + 1} `,
    el("button", { id: "page-next", onclick: go(Math.min(last * PAGE, state.offset + PAGE)) }, "next ›"));
}

function content(value) {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((p) => (p && p.text) || JSON.stringify(p)).join("\n");
  return value == null ? "" : JSON.stringify(value, null, 2);
}

function message(m) {
  if (m.type === "function_call") return el("div", { class: "message tool-call" },
    el("span", { class: "role", text: "tool call " + (m.name || "") }),
    el("pre", { class: "tool-args", text: m.arguments || "" }));
  if (m.type === "function_call_output") return el("div", { class: "message tool-output" },
    el("span", { class: "role", text: "tool output" }), el("pre", { class: "tool-result", text: content(m.output) }));
  return el("div", { class: "message role-" + (m.role || "other") },
    el("span", { class: "role", text: m.role || m.type || "message" }), el("pre", { text: content(m.content) }));
}

function attempt(record, n) {
  const t = record.trajectory || {};
  const calls = (t.model_calls || []).map((c, i) => el("tr", { class: "model-call" },
    el("td", { text: i }), el("td", { text: num(c.latency_s) }),
    el("td", { text: `${c.prompt_tokens} + ${c.completion_tokens}` }), el("td", { text: c.worker })));
  const tools = (t.tool_calls || []).map((c) => el("div", { class: "tool-call" },
    el("span", { class: "role", text: c.name }), el("pre", { class: "tool-args", text: c.arguments }),
    el("pre", { class: "tool-result", text: content(c.result) })));
  const error = record.error || t.error;
  return el("section", { id: "attempt-" + n, class: "attempt " + (record.correct ? "correct" : "wrong") },
    el("h2", { text: `attempt ${record.attempt}` }),
    el("table", { class: "verdict" },
      el("tr", {}, el("th", { text: "answer" }), el("td", { class: "answer", text: record.answer ?? "" })),
      ...("gold" in record ? [el("tr", {}, el("th", { text: "gold" }), el("td", { class: "gold", text: content(record.gold) }))] : []),
      el("tr", {}, el("th", { text: "reward" }), el("td", { text: num(record.reward) })),
      el("tr", {}, el("th", { text: "correct" }), el("td", { text: String(record.correct) })),
      el("tr", {}, el("th", { text: "latency s" }), el("td", { text: num(record.latency_s) }))),
    ...(error ? [el("pre", { class: "error", text: content(error) })] : []),
    el("h3", { text: "model calls" }),
    table("", ["#", "latency s", "tokens", "worker"].map((h) => el("th", { text: h })), calls),
    el("h3", { text: "tool calls" }), ...tools,
    el("h3", { text: "messages" }), el("div", { class: "messages" }, ...(t.messages || []).map(message)),
    el("h3", { text: "final output" }), el("pre", { class: "final-output", text: content(t.final_output) }));
}

async function sampleView(id, sampleId) {
  const body = await api(runPath(id) + "/samples/" + encodeURIComponent(sampleId));
  show(el("p", {}, el("a", { href: "#/run/" + encodeURIComponent(id), text: "← " + id })),
    el("h1", { text: sampleId }),
    el("div", { id: "attempts", class: "attempts" }, ...body.attempts.map(attempt)));
}

const states = {};

async function route() {
  routed += 1;
  clearInterval(timer);
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[2] === "sample") await sampleView(parts[1], parts.slice(3).join("/"));
    else if (parts[0] === "run") {
      states[parts[1]] ||= { outcome: "", worker: "", q: "", sort: "row", desc: false, offset: 0 };
      await runView(parts[1], states[parts[1]]);
    } else await runsView();
  } catch (error) {
    show(el("p", { id: "error", class: "error", text: String(error.message || error) }));
  }
}

window.addEventListener("hashchange", route);
route();
