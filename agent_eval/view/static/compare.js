// Two runs paired by sample and attempt: B - A, and the attempts only one of them got right.
import { api, el, num, runHref, sampleHref, show, table } from "./common.js";

const VERDICT = { true: "better", false: "worse", null: "" };

// The report's cells of one metric; B - A is marked better or worse once it exceeds the noise.
function metricRow(row, extra = []) {
  return el("tr", { "data-metric": row.cells[0], class: VERDICT[row.better] },
    ...[...row.cells, ...extra].map((cell) => el("td", { text: cell })));
}

function metricTable(id, headers, rows) {
  return table(id, headers.map((h) => el("th", { text: h })), rows);
}

function flipRow(flip, ids) {
  const link = (side) => el("a", { class: "transcript-" + side, text: side.toUpperCase(),
    href: sampleHref(ids[side], flip.sample_id, flip.attempt) });
  return el("tr", { "data-sample": flip.sample_id, "data-attempt": flip.attempt },
    el("td", { text: flip.sample_id }), el("td", { text: flip.attempt }),
    el("td", { class: "answer-a", text: flip.a.answer ?? "" }),
    el("td", { class: "answer-b", text: flip.b.answer ?? "" }),
    el("td", { text: num(flip.a.reward) }), el("td", { text: num(flip.b.reward) }),
    el("td", {}, link("a"), " ", link("b")));
}

const FLIP_HEADERS = ["sample", "attempt", "A's answer", "B's answer", "A reward", "B reward",
  "transcripts"];

function flipSection(id, title, flips, ids, none) {
  const shown = flips.length
    ? metricTable(id, FLIP_HEADERS, flips.map((flip) => flipRow(flip, ids)))
    : el("p", { class: "none", text: none });
  return el("section", { class: "flips" }, el("h2", { text: `${title} (${flips.length})` }), shown);
}

// The flips, or a plain sentence when the runs share no scored attempt or none flipped.
function flips(body) {
  if (!body.paired) return [el("p", { id: "no-pairs", text: "The runs share no attempt scored "
    + "in both (same sample, same attempt): nothing can flip, and B - A above is unpaired." })];
  if (!body.a_only.length && !body.b_only.length) return [el("p", { id: "no-flips",
    text: `Nothing flipped: each of the ${body.pairs} paired attempts is right in both runs `
      + "or wrong in both." })];
  return [
    flipSection("flips-a", "Right in A only", body.a_only, body.ids,
      "None: B got right every paired attempt A got right."),
    flipSection("flips-b", "Right in B only", body.b_only, body.ids,
      "None: A got right every paired attempt B got right."),
  ];
}

function runLink(side, id) {
  return el("tr", {}, el("th", { text: side.toUpperCase() }),
    el("td", {}, el("a", { id: "run-" + side, href: runHref(id), text: id })));
}

export async function compareView(a, b) {
  const hash = location.hash;
  show(el("h1", { text: "B compared with A" }), el("p", { id: "compare-loading",
    text: "Pairing the runs' attempts; on large runs this takes a minute…" }));
  // A late answer (or error) is dropped when the user has gone to another page meanwhile.
  const query = new URLSearchParams({ a: a ?? "", b: b ?? "" });
  const body = await api("/api/compare?" + query).catch((error) => {
    if (location.hash === hash) throw error;
  });
  if (location.hash !== hash) return;
  const headers = body.headers.slice(0, -1);
  show(el("h1", { text: "B compared with A" }),
    el("table", { id: "compare-runs" }, runLink("a", a), runLink("b", b)),
    el("ul", { id: "compare-notes" }, ...body.notes.map((note) => el("li", { text: note }))),
    el("h2", { text: "B - A" }),
    metricTable("compare-metrics", headers, body.metrics.map((row) => metricRow(row))),
    el("h2", { text: body.paired ? "B - A paired by sample and attempt" : "B - A unpaired" }),
    metricTable("compare-paired", body.headers,
      body.paired_metrics.map((row) => metricRow(row, [row.method]))),
    el("p", { id: "compare-method", text: body.paired_note }),
    ...flips(body));
}
