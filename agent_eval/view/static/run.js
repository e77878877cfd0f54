// A run's page: its headline, then its attempts, filtered, sorted and paged on the server.
import {
  api, el, interval, num, outcome, pct, poll, runPath, sampleHref, show, table,
} from "./common.js";
import { sessionHeatmap } from "./sessions.js";

const PAGE = 50;
const COLUMNS = [["sample_id", "sample"], ["attempt", "attempt"], ["correct", "outcome"],
  ["reward", "reward"], ["error_kind", "error"], ["model_calls", "model calls"],
  ["tool_calls", "tool calls"], ["tokens", "tokens"], ["latency_s", "latency s"]];
const states = {}; // each run's filters, kept while the user goes to a sample and back

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

function select(id, options, value) {
  return el("select", { id }, ...options.map(([v, label]) => {
    const option = el("option", { value: v, text: label });
    option.selected = v === value;
    return option;
  }));
}

export async function runView(id) {
  const state = states[id] ||= { outcome: "", worker: "", q: "", sort: "row", desc: false, offset: 0 };
  const body = await api(runPath(id) + "/summary");
  const kinds = Object.keys(body.errors);
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
  document.getElementById("headline").after(await sessionHeatmap(id));
  await refresh();
  if (body.run.status === "running") poll(async (stillShown) => {
    const now = await api(runPath(id) + "/summary");
    if (!stillShown()) return false;
    document.getElementById("headline").replaceWith(headline(now));
    await refresh();
    return now.run.status === "running";
  });
}

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
    el("td", {}, el("a", { href: sampleHref(id, r.sample_id), text: r.sample_id })),
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
