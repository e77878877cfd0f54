// The runs page: one row per run or watch directory under the roots.
import { api, el, interval, runHref, show, table } from "./common.js";

export async function runsView() {
  const { runs } = await api("/api/runs");
  const headers = ["run", "agent", "model", "dataset", "attempts", "accuracy [95%]", "unscored",
    "status", "started"].map((h) => el("th", { text: h }));
  const rows = runs.map((r) => el("tr", { "data-run": r.id },
    el("td", {}, el("a", { href: runHref(r.id), text: r.id })),
    el("td", { text: r.agent ?? "" }), el("td", { text: r.model ?? "" }),
    el("td", { text: r.dataset ?? "" }), el("td", { text: r.attempts }),
    el("td", { text: interval(r.accuracy) }), el("td", { text: r.unscored }),
    el("td", { class: "status", text: r.status + (r.kind === "watch" ? " (watch)" : "") }),
    el("td", { text: r.started ?? "" })));
  show(el("h1", { text: "Runs" }), table("runs-table", headers, rows));
}
