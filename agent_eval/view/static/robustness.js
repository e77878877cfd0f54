// Robustness on the run page and the sample page: accuracy on the originals and on each
// perturbation kind's variants, the samples that break (right on the original, wrong on its
// variant at the same attempt), and the links between an original and its variants.
import { api, el, interval, outcome, pagerControls, pct, runPath, sampleHref, table } from "./common.js";

const PAGE = 20;
const SOURCES = {
  "summary.json": "from summary.json",
  "samples.jsonl": "counted from the attempts so far; the drop's interval comes with summary.json",
};
const th = (text) => el("th", { text });
const td = (text, cls) => el("td", cls ? { class: cls, text } : { text });
const shown = (x) => (x == null ? "" : String(x));
const estimate = (a) => (a && a.value != null ? interval(a) : "no pairs yet");

function drop(d) {
  if (!d || d.value == null) return "";
  const value = (d.value > 0 ? "+" : "") + pct(d.value);
  return d.low == null ? value : `${value} [${pct(d.low)}, ${pct(d.high)}]`;
}

function figures(body) {
  const originals = el("tr", { "data-kind": "original" }, td("originals"),
    td(estimate(body.original_accuracy), "num"), td(shown(body.original_accuracy?.n), "num"),
    ...Array.from({ length: 7 }, () => td("")));
  const kinds = body.kinds.map((k) => el("tr", { "data-kind": k.kind }, td(k.kind),
    td(estimate(k.accuracy), "num"), td(shown(k.accuracy?.n), "num"), td(shown(k.variants), "num"),
    td(shown(k.skipped), "num"), td(shown(k.pairs), "num"), td(shown(k.broke), "num"),
    td(shown(k.fixed), "num"), td(drop(k.drop), "num"),
    td(k.mcnemar_p == null ? "" : k.mcnemar_p.toPrecision(3), "num")));
  const headers = ["samples", "accuracy [95% CI]", "attempts", "variants", "skipped", "pairs",
    "broke", "fixed", "drop [95% CI]", "McNemar p"];
  return table("robustness-kinds", headers.map(th), [originals, ...kinds]);
}

// One side of a broken pair: its sample (a link to the attempt), question and answer.
function side(id, pair, which) {
  const s = pair[which];
  return el("td", { class: which },
    el("a", { href: sampleHref(id, s.sample_id, pair.attempt), text: s.sample_id }),
    el("pre", { class: "question", text: s.question ?? "" }),
    el("div", {}, "answer: ", el("span", { class: "answer", text: s.answer ?? "(none)" })));
}

function brokenTable(id, pairs) {
  const rows = pairs.map((p) => el("tr", { class: "broken-pair", "data-kind": p.kind },
    td(p.kind), td(String(p.attempt), "num"), side(id, p, "original"), side(id, p, "variant")));
  return table("broken", ["kind", "attempt", "original (right)", "variant (wrong)"].map(th), rows);
}

export function robustnessPart(id) {
  const node = el("section", { id: "robustness", hidden: "" });
  const state = { offset: 0, asked: 0 };
  const load = async () => {
    const asked = ++state.asked;
    const body = await api(`${runPath(id)}/robustness?offset=${state.offset}&limit=${PAGE}`);
    if (asked !== state.asked) return; // a later request (a page turned) answers instead
    const { total, pairs } = body.broken;
    const pages = Math.max(1, Math.ceil(total / PAGE));
    const go = (offset) => { state.offset = offset; load(); };
    const text = `page ${Math.floor(state.offset / PAGE) + 1} of ${pages}`;
    node.replaceChildren(el("h2", { text: "Robustness" }),
      el("p", { class: "caption", text: SOURCES[body.source] ?? body.source }),
      figures(body),
      el("p", { id: "robust-accuracy" },
        "robust accuracy (right on the original and on every variant, attempt by attempt): ",
        el("span", { class: "num", text: estimate(body.robust_accuracy) })),
      ...(body.flip_rate == null ? [] : [el("p", { id: "flip-rate", text: `challenge-turn flip rate: ${pct(body.flip_rate)}` })]),
      el("h3", { text: "Samples that break" }),
      el("p", { class: "controls" }, el("span", { id: "broken-count",
        text: `${total} pairs right on the original, wrong on the variant` }),
      ...(total > PAGE ? pagerControls("broken", state.offset, total, PAGE, text, go) : [])),
      ...(pairs.length ? [brokenTable(id, pairs)] : []));
  };
  // A run without variants keeps the part hidden and never asks for it.
  const update = async (summary) => {
    if (!summary.perturbations.length) return;
    node.hidden = false;
    await load();
  };
  return { node, update };
}

// On a sample's page: the original a variant perturbs, or an original's variants with each
// attempt's outcome, every one a link.
export function variantLinks(id, body) {
  if (body.variant_of != null) {
    return [el("p", { id: "variant-of" }, `a ${body.perturbation} variant of `,
      el("a", { id: "original-link", href: sampleHref(id, body.variant_of), text: body.variant_of }))];
  }
  if (!body.variants.length) return [];
  const rows = body.variants.map((v) => el("tr", { "data-variant": v.sample_id }, td(v.perturbation),
    el("td", {}, el("a", { class: "variant-link", href: sampleHref(id, v.sample_id), text: v.sample_id })),
    el("td", {}, ...v.attempts.map((a) => el("a", { class: `attempt-outcome ${outcome(a)}`,
      href: sampleHref(id, v.sample_id, a.attempt), text: `#${a.attempt} ${outcome(a)}` })))));
  return [el("section", { id: "variants" }, el("h2", { text: "Variants" }),
    table("variants-table", ["perturbation", "sample", "attempts"].map(th), rows))];
}
