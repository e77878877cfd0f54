// A run's page: its headline by dimension, robustness (a run with perturbed variants), errors by
// kind, per-worker load, the report's plots, then its attempts, filtered, sorted and paged on the server. Each part of the page is
// { node, update(summary) }, updated together when the page opens and while the run is running.
import {
  api, el, num, outcome, pagerControls, poll, runPath, sampleHref, show, table,
} from "./common.js";
import { controlPart } from "./control.js";
import { robustnessPart } from "./robustness.js";
import { sessionsPart } from "./sessions.js";

const PAGE = 50;
const COLUMNS = [["sample_id", "sample"], ["attempt", "attempt"], ["correct", "outcome"],
  ["reward", "reward"], ["error_kind", "error"], ["model_calls", "model calls"],
  ["tool_calls", "tool calls"], ["tokens", "tokens"], ["latency_s", "latency s"],
  ["workers", "workers"]];
const RANGES = [["model_calls", "model calls"], ["tool_calls", "tool calls"],
  ["tokens", "tokens"], ["latency_s", "latency s"]];
const CLASSES = { model: "model", infra: "infrastructure" };
const SOURCES = { "summary.json": "from summary.json", "samples.jsonl": "rebuilt from the attempts so far" };
const states = {}; // each run's filters, kept while the user goes to a sample and back

// At most one call of `load` at a time: a poll tick that comes while one runs shares it,
// since a running run's report is rebuilt from every attempt.
function once(load) {
  let running = null;
  return (...args) => (running ||= load(...args).finally(() => { running = null; }));
}

const th = (text) => el("th", { text });
const section = (id, title, ...children) => el("section", { id }, el("h2", { text: title }), ...children);

function headlinePart(id) {
  const node = el("div", { id: "headline" });
  const update = once(async (summary) => {
    const body = await api(runPath(id) + "/headline");
    const dimensions = body.sections.map((s) => el("section", { "data-dimension": s.dimension },
      el("h2", { text: s.title }),
      el("table", {}, el("tbody", {}, ...s.rows.map(([label, value]) =>
        el("tr", {}, el("th", { text: label }), el("td", { class: "num", text: value })))))));
    node.replaceChildren(
      el("p", { class: "run-status", text: `${summary.run.status} · ${SOURCES[body.source] ?? body.source}` }),
      el("p", { class: "caption", text: body.caption }),
      el("div", { class: "dimensions" }, ...dimensions),
      ...body.notes.map((note) => el("p", { class: "note", text: note })));
  });
  return { node, update };
}

function errorsPart(id, choose) {
  const node = section("errors-section", "Errors by kind");
  const update = once(async () => {
    const { errors } = await api(runPath(id) + "/errors");
    const rows = errors.map((e) => el("tr", { "data-kind": e.kind },
      el("td", {}, el("button", { class: "link", text: e.kind, onclick: () => choose("outcome", e.kind) })),
      el("td", { class: "num", text: e.count }), el("td", { text: CLASSES[e.class] ?? e.class })));
    const none = errors.length ? [] : [el("p", { class: "empty", text: "no errors" })];
    node.replaceChildren(node.firstChild,
      table("errors", ["kind", "attempts", "failure of"].map(th), rows), ...none);
  });
  return { node, update };
}

function workersPart(id, choose) {
  const node = section("workers-section", "Per-worker load");
  const update = once(async () => {
    const { workers, note } = await api(runPath(id) + "/workers");
    const known = (x) => (x == null ? "" : String(x));
    const rows = workers.map((w) => el("tr", { "data-worker": w.worker },
      el("td", {}, el("button", { class: "link", text: w.worker, onclick: () => choose("worker", w.worker) })),
      el("td", { class: "num", text: w.attempts }), el("td", { class: "num", text: known(w.served) }),
      el("td", { class: "num", text: known(w.failures) }),
      el("td", { text: w.healthy == null ? "" : w.healthy ? "healthy" : "unhealthy" }),
      el("td", { text: known(w.breaker) })));
    const headers = ["worker", "attempts calling it", "served", "failures", "health", "breaker"];
    node.replaceChildren(node.firstChild, table("workers", headers.map(th), rows),
      ...(note ? [el("p", { class: "note", text: note })] : []));
  });
  return { node, update };
}

// The report's plots as images: an <img> runs no script, whatever the SVG holds.
function figuresPart(id) {
  const node = section("figures", "Plots");
  let shown = null; // the attempts count the images were drawn for
  const update = once(async (summary) => {
    if (shown === summary.run.attempts) return;
    const { figures, note } = await api(runPath(id) + "/figures");
    const version = summary.run.attempts;
    node.replaceChildren(node.firstChild, ...figures.map((f) => el("figure", { "data-figure": f.name },
      el("img", { class: "figure", alt: f.caption,
        src: `${runPath(id)}/figures/${encodeURIComponent(f.name)}.svg?v=${version}` }),
      el("figcaption", { text: f.caption }))),
    ...(note ? [el("p", { class: "note", text: note })] : []));
    shown = version;
  });
  return { node, update };
}

function select(id, options, value) {
  const box = el("select", { id });
  setOptions(box, options, value);
  return box;
}

function setOptions(box, options, value) {
  const wanted = options.map(([v]) => v).join("\n");
  if ([...box.options].map((o) => o.value).join("\n") === wanted) return;
  box.replaceChildren(...options.map(([v, label]) => el("option", { value: v, text: label })));
  box.value = value;
}

const outcomes = (kinds) => [["", "all"], ["correct", "correct"], ["wrong", "wrong"],
  ["unscored", "unscored"], ...kinds.map((k) => [k, k])];
const workerOptions = (workers) => [["", "all workers"], ...workers.map((w) => [w, w])];
const perturbationOptions = (kinds) => [["", "all samples"], ["original", "originals"],
  ...kinds.map((k) => [k, k + " variants"])];

function rangeInputs(state, changed) {
  return RANGES.map(([key, label]) => el("label", { class: "range" }, label + " ",
    ...["min", "max"].map((side) => {
      const input = el("input", { id: `${side}-${key}`, type: "number", min: "0", step: "any", placeholder: side });
      input.value = state.ranges[`${side}_${key}`] ?? "";
      input.addEventListener("change", () => { state.ranges[`${side}_${key}`] = input.value; changed(); });
      return input;
    })));
}

function samplesPart(id, state) {
  const outcomeBox = select("filter-outcome", outcomes([]), state.outcome);
  const workerBox = select("filter-worker", workerOptions([]), state.worker);
  const perturbationBox = select("filter-perturbation", perturbationOptions([]), state.perturbation);
  perturbationBox.hidden = true; // shown once the run has variants
  const search = el("input", { id: "search", type: "search", placeholder: "search question or answer" });
  search.value = state.q;
  const count = el("span", { id: "row-count" });
  const pager = el("span", { id: "pager" });
  const holder = el("div", { id: "rows" });
  const refresh = () => loadRows(id, state, holder, count, pager);
  // What the user asks for; a failure is shown where the count goes (the poll logs its own).
  state.refresh = () => refresh().catch((error) => { count.textContent = String(error.message || error); });
  const changed = () => { state.offset = 0; state.refresh(); };
  outcomeBox.addEventListener("change", () => { state.outcome = outcomeBox.value; changed(); });
  workerBox.addEventListener("change", () => { state.worker = workerBox.value; changed(); });
  perturbationBox.addEventListener("change", () => { state.perturbation = perturbationBox.value; changed(); });
  search.addEventListener("change", () => { state.q = search.value; changed(); });
  const node = section("samples", "Attempts",
    el("div", { class: "controls" }, outcomeBox, workerBox, perturbationBox, search, count, pager),
    el("div", { class: "controls ranges" }, ...rangeInputs(state, changed)), holder);
  const update = async (summary) => {
    setOptions(outcomeBox, outcomes(Object.keys(summary.errors)), state.outcome);
    setOptions(workerBox, workerOptions(Object.keys(summary.workers)), state.worker);
    setOptions(perturbationBox, perturbationOptions(summary.perturbations), state.perturbation);
    state.kinds = summary.perturbations.length > 0;
    perturbationBox.hidden = !state.kinds;
    await refresh();
  };
  // Shows only the attempts where `key` (outcome or worker) is `value`, as its menu would.
  const choose = (key, value) => {
    state[key] = value;
    (key === "outcome" ? outcomeBox : workerBox).value = value;
    changed();
    node.scrollIntoView();
  };
  return { node, update, choose };
}

export async function runView(id) {
  const state = states[id] ||= { outcome: "", worker: "", perturbation: "", q: "", ranges: {},
    sort: "row", desc: false, offset: 0, asked: 0, kinds: false };
  const body = await api(runPath(id) + "/summary");
  const samples = samplesPart(id, state);
  const parts = [controlPart(id), headlinePart(id), robustnessPart(id), sessionsPart(id), errorsPart(id, samples.choose),
    workersPart(id, samples.choose), figuresPart(id), samples];
  show(el("h1", { text: id }), ...parts.map((part) => part.node));
  const update = (summary) => Promise.all(parts.map((part) => part.update(summary)));
  await update(body);
  if (body.run.status === "running") poll(async (stillShown) => {
    const now = await api(runPath(id) + "/summary");
    if (!stillShown()) return false;
    await update(now);
    return now.run.status === "running";
  });
}

async function loadRows(id, state, holder, count, pager) {
  const params = new URLSearchParams({ sort: state.sort, desc: state.desc ? "1" : "0",
    offset: state.offset, limit: PAGE });
  for (const key of ["outcome", "worker", "perturbation", "q"]) if (state[key]) params.set(key, state[key]);
  for (const [key, value] of Object.entries(state.ranges)) if (value !== "") params.set(key, value);
  // A poll's answer can come after the user changed the filter: only the latest is shown.
  const asked = ++state.asked;
  const page = await api(runPath(id) + "/rows?" + params);
  if (asked !== state.asked) return;
  const headers = COLUMNS.map(([key, label]) => el("th", { "data-sort": key,
    text: label + (state.sort === key ? (state.desc ? " ▼" : " ▲") : ""),
    onclick: () => { state.desc = state.sort === key ? !state.desc : false; state.sort = key; state.refresh(); } }));
  // A run with variants gets a kind column after the sample's.
  if (state.kinds) headers.splice(1, 0, el("th", { text: "kind" }));
  const kind = (r) => (state.kinds ? [el("td", { class: "kind", text: r.perturbation ?? "original" })] : []);
  const rows = page.rows.map((r) => el("tr", { "data-index": r.index, class: outcome(r) },
    el("td", {}, el("a", { href: sampleHref(id, r.sample_id, r.attempt), text: r.sample_id })), ...kind(r),
    el("td", { text: r.attempt }), el("td", { text: outcome(r) }), el("td", { text: num(r.reward) }),
    el("td", { text: r.error_kind ?? "" }), el("td", { text: r.model_calls }),
    el("td", { text: r.tool_calls }), el("td", { text: r.tokens }),
    el("td", { text: num(r.latency_s) }), el("td", { text: r.workers.join(", ") })));
  holder.replaceChildren(table("rows-table", headers, rows));
  count.textContent = `${page.total} attempts`;
  const pages = Math.max(1, Math.ceil(page.total / PAGE));
  const text = `page ${Math.floor(state.offset / PAGE) + 1} of ${pages}`;
  const go = (offset) => { state.offset = offset; state.refresh(); };
  pager.replaceChildren(...pagerControls("page", state.offset, page.total, PAGE, text, go));
}
