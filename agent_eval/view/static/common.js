// Shared by every page. Every piece of run data goes in as text (textContent / text nodes),
// never as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

export const el = (tag, attrs, ...children) => fill(document.createElement(tag), attrs, children);
export const svgEl = (tag, attrs, ...children) =>
  fill(document.createElementNS(SVG_NS, tag), attrs, children);

function fill(node, attrs, children) {
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

// A static copy (`agent-eval view --export`) answers from the files it holds (offline.js).
const copy = globalThis.agentEvalCopy;

export async function api(path) {
  if (copy) return copy.get(path);
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// Where an image the API serves is: in a static copy, its file there.
export const asset = (path) => (copy ? copy.asset(path) : path);
export const runPath = (id) => "/api/runs/" + id.split("/").map(encodeURIComponent).join("/");
export const runHref = (id) => "#/run/" + encodeURIComponent(id);
export const watchHref = (id) => "#/watch/" + encodeURIComponent(id);
export const compareHref = (a, b) => `#/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
// A sample's page; with an attempt (and a turn of it) the page opens on that attempt.
export function sampleHref(id, sampleId, attempt, turn) {
  let href = runHref(id) + "/sample/" + encodeURIComponent(sampleId);
  if (attempt != null) href += "/attempt/" + attempt;
  if (attempt != null && turn != null) href += "/turn/" + turn;
  return href;
}
export const pct = (x) => (x == null ? "" : (100 * x).toFixed(1) + "%");
export const num = (x, digits = 2) => (x == null ? "" : Number(x).toFixed(digits));
export const interval = (a) => (a ? `${pct(a.value)} [${pct(a.low)}, ${pct(a.high)}]` : "");
// An attempt never scored has a null `correct` (rows, records, variants alike): no verdict.
export const outcome = (r) => (r.correct == null ? "unscored" : r.correct ? "correct" : "wrong");

export function show(...nodes) {
  document.getElementById("app").replaceChildren(...nodes);
}

export function showError(error) {
  show(el("p", { id: "error", class: "error", text: String(error.message || error) }));
}

// A label and its value as one row of a two-column table.
export const row = (label, cls, value) => el("tr", {}, el("th", { text: label }), el("td", { class: cls, text: value }));

export function table(id, headers, rows) {
  return el("table", { id }, el("thead", {}, el("tr", {}, ...headers)), el("tbody", {}, ...rows));
}

// Prev and next buttons around `text`, for a list shown `size` at a time from `offset`;
// `go(offset)` shows another page, always one within the list.
export function pagerControls(prefix, offset, total, size, text, go) {
  const last = Math.max(0, Math.ceil(total / size) - 1) * size;
  return [
    el("button", { id: prefix + "-prev", onclick: () => go(Math.max(0, offset - size)) }, "‹ prev"),
    ` ${text} `,
    el("button", { id: prefix + "-next", onclick: () => go(Math.min(last, offset + size)) }, "next ›"),
  ];
}

export function content(value) {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map((p) => (p && p.text) || JSON.stringify(p)).join("\n");
  return value == null ? "" : JSON.stringify(value, null, 2);
}

// Which page is shown: a page's late callbacks (a poll answered after the user left) check
// that the route they were made for is still the current one before touching the page.
const shown = { route: 0, timer: null };

export function newRoute() {
  shown.route += 1;
  clearInterval(shown.timer);
  shown.timer = null;
}

// Calls `tick` every `ms` while this page is shown; `tick` returns false to stop.
export function poll(tick, ms = 1000) {
  const route = shown.route;
  const timer = setInterval(async () => {
    if (route !== shown.route) return clearInterval(timer);
    try {
      if ((await tick(() => route === shown.route)) === false) clearInterval(timer);
    } catch (error) {
      if (route === shown.route) console.warn("refresh failed:", error);
    }
  }, ms);
  shown.timer = timer;
}
