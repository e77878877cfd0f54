// A watch directory's page: the curve of scores over checkpoints, each point linking to its
// step's run, the latest learning-curve forecast with its band, then the decision taken at
// each checkpoint.
import {
  api, el, interval, num, pct, poll, runHref, runPath, show, svgEl, table,
} from "./common.js";

const BOX = { width: 640, height: 300, left: 56, right: 24, top: 28, bottom: 44, pad: 16 };
const SERIES = [["probe", "probe"], ["full", "full evaluation (95% interval)"]];
const MAX_X_TICKS = 8;

// Pixel positions: steps across (one checkpoint alone sits in the middle), scores 0..1 up.
function scales(steps) {
  const first = Math.min(...steps);
  const span = Math.max(...steps) - first;
  const across = BOX.width - BOX.left - BOX.right - 2 * BOX.pad;
  const up = BOX.height - BOX.top - BOX.bottom;
  return {
    x: (step) => BOX.left + BOX.pad + (span ? ((step - first) / span) * across : across / 2),
    y: (score) => BOX.top + (1 - score) * up,
  };
}

function axes(steps, { x, y }) {
  const right = BOX.width - BOX.right;
  const bottom = BOX.height - BOX.bottom;
  const group = svgEl("g", { class: "axes" },
    svgEl("line", { x1: BOX.left, x2: right, y1: bottom, y2: bottom }),
    svgEl("line", { x1: BOX.left, x2: BOX.left, y1: BOX.top, y2: bottom }));
  for (const score of [0, 0.25, 0.5, 0.75, 1]) {
    group.append(svgEl("line", { class: "grid", x1: BOX.left, x2: right, y1: y(score), y2: y(score) }),
      svgEl("text", { class: "tick y", x: BOX.left - 6, y: y(score) }, `${100 * score}%`));
  }
  const every = Math.ceil(steps.length / MAX_X_TICKS);
  for (const step of steps.filter((_, i) => i % every === 0)) {
    group.append(svgEl("line", { x1: x(step), x2: x(step), y1: bottom, y2: bottom + 4 }),
      svgEl("text", { class: "tick x", x: x(step), y: bottom + 16 }, step));
  }
  const middle = (BOX.top + bottom) / 2;
  group.append(svgEl("text", { class: "label", x: (BOX.left + right) / 2, y: BOX.height - 6 }, "step"),
    svgEl("text", { class: "label", transform: `translate(14 ${middle}) rotate(-90)` }, "accuracy"));
  return group;
}

function tooltip(kind, checkpoint) {
  const score = checkpoint[kind];
  const what = kind === "full" ? `full evaluation ${interval(score)}` : `probe ${pct(score.value)}`;
  return `step ${checkpoint.step}: ${what}`;
}

// One series: its line, the full evaluation's intervals, then a point per checkpoint scored,
// each a link to the run that scored it.
function series(kind, checkpoints, { x, y }) {
  const scored = checkpoints.filter((c) => c[kind] && c[kind].value != null);
  const group = svgEl("g", { class: `series ${kind}` });
  if (scored.length > 1) {
    group.append(svgEl("polyline",
      { points: scored.map((c) => `${x(c.step)},${y(c[kind].value)}`).join(" ") }));
  }
  for (const c of scored.filter((c) => kind === "full" && c.full.low != null && c.full.high != null)) {
    group.append(svgEl("line",
      { class: "whisker", x1: x(c.step), x2: x(c.step), y1: y(c.full.low), y2: y(c.full.high) }));
  }
  for (const c of scored) {
    const point = svgEl("a", { class: `point ${kind}`, "data-step": c.step },
      svgEl("circle", { cx: x(c.step), cy: y(c[kind].value), r: 5 }), svgEl("title", {}, tooltip(kind, c)));
    const run = c[kind + "_run"];
    if (run) point.setAttribute("href", runHref(run));
    group.append(point);
  }
  return group;
}

// The latest forecast (the bounded trigger's): its 90% band as an area, its mean dashed.
function forecastBand(forecast, { x, y }) {
  const along = (values) => forecast.steps.map((step, i) => `${x(step)},${y(values[i])}`);
  const band = [...along(forecast.low), ...along(forecast.high).reverse()].join(" ");
  const last = forecast.steps.length - 1;
  return svgEl("g", { class: "series forecast" },
    svgEl("polygon", { points: band }),
    svgEl("polyline", { points: along(forecast.mean).join(" ") }),
    svgEl("title", {}, `forecast (${forecast.curve}): ${pct(forecast.mean[last])} at step ` +
      `${forecast.steps[last]}, 90% band ${pct(forecast.low[last])} to ${pct(forecast.high[last])}` +
      levelling(forecast)));
}

// A saturating curve's plateau, and the step it settles by when that is still ahead.
const levelling = (forecast) => (forecast.plateau == null ? "" : `; plateau ${pct(forecast.plateau)}` +
  (forecast.settles_at == null ? "" : `, settled by step ${forecast.settles_at}`));

const latestForecast = (checkpoints) =>
  [...checkpoints].reverse().map((c) => c.forecast).find((f) => f) || null;

function legend(forecast) {
  const group = svgEl("g", { class: "legend" });
  const shown = forecast ? [...SERIES, ["forecast", "forecast (90% band)"]] : SERIES;
  shown.forEach(([kind, label], i) => {
    const x = BOX.left + 8 + i * 120;
    group.append(svgEl("g", { class: `series ${kind}` },
      svgEl("circle", { cx: x, cy: 12, r: 5 }), svgEl("text", { x: x + 10, y: 12 }, label)));
  });
  return group;
}

function chart(checkpoints) {
  if (!checkpoints.length) return el("p", { id: "curve", text: "No checkpoint decided yet." });
  const steps = checkpoints.map((c) => c.step);
  const forecast = latestForecast(checkpoints);
  const at = scales(forecast ? [...steps, ...forecast.steps] : steps);
  const drawing = svgEl("svg", { class: "chart", viewBox: `0 0 ${BOX.width} ${BOX.height}`,
    width: BOX.width, height: BOX.height, role: "img" },
    axes(steps, at), ...(forecast ? [forecastBand(forecast, at)] : []),
    ...SERIES.map(([kind]) => series(kind, checkpoints, at)), legend(forecast));
  const ahead = forecast ? "; the dashed line and green band forecast the curve ahead" : "";
  return el("figure", { id: "curve" }, drawing,
    el("figcaption", { text: "Probe score of every checkpoint and full-evaluation accuracy; " +
      `click a point for its run${ahead}.` }));
}

const signed = (x) => (x == null ? "" : (x > 0 ? "+" : "") + num(x, 3));

function runLinks(checkpoint) {
  const links = [];
  for (const kind of ["probe", "full"]) {
    const run = checkpoint[kind + "_run"];
    if (run) links.push(" ", el("a", { class: `run-${kind}`, href: runHref(run), text: kind }));
  }
  return links.slice(1);
}

function decisions(checkpoints) {
  const headers = ["step", "probe", "against the last full evaluation", "decision",
    "full accuracy [95%]", "runs"]
    .map((h) => el("th", { text: h }));
  const rows = checkpoints.map((c) => el("tr", { "data-step": c.step, class: c.full ? "fired" : "" },
    el("td", { text: c.step }), el("td", { text: pct(c.probe.value) }),
    el("td", { text: c.against ?? signed(c.change) }), el("td", { text: c.decision }),
    el("td", { text: interval(c.full) }), el("td", {}, ...runLinks(c))));
  return table("checkpoints", headers, rows);
}

export async function watchView(id) {
  const path = runPath(id) + "/watch";
  const status = el("p", { id: "watch-status" });
  const holder = el("div", { id: "watch" });
  let drawn = "";
  // Drawn again only when a checkpoint changed, so a tooltip being read is left alone.
  const render = (body) => {
    status.textContent = `${body.checkpoints.length} checkpoints, ${body.status}`;
    const now = JSON.stringify(body.checkpoints);
    if (now !== drawn) holder.replaceChildren(chart(body.checkpoints), decisions(body.checkpoints));
    drawn = now;
  };
  const body = await api(path);
  show(el("h1", { text: id }), status, holder);
  render(body);
  if (body.status === "running") poll(async (stillShown) => {
    const now = await api(path);
    if (!stillShown()) return false;
    render(now);
    return now.status === "running";
  });
}
