// The runs page: one row per run or watch directory under the roots; pick two runs to compare.
import { api, compareHref, el, interval, runHref, show, table, watchHref } from "./common.js";

// A checkbox per run (not per watch directory); the button compares the first two picked.
function picker() {
  const picked = [];
  const button = el("button", { id: "compare", disabled: "" }, "compare the two picked runs");
  button.addEventListener("click", () => { location.hash = compareHref(picked[0], picked[1]); });
  const box = (id) => {
    const input = el("input", { type: "checkbox", class: "pick", title: "pick to compare" });
    input.addEventListener("change", () => {
      if (input.checked) picked.push(id);
      else picked.splice(picked.indexOf(id), 1);
      button.disabled = picked.length !== 2;
    });
    return input;
  };
  return { button, box };
}

export async function runsView() {
  const { runs } = await api("/api/runs");
  const { button, box } = picker();
  const headers = ["run", "agent", "model", "dataset", "attempts", "accuracy [95%]", "unscored",
    "status", "started"].map((h) => el("th", { text: h }));
  const rows = runs.map((r) => el("tr", { "data-run": r.id },
    el("td", {}, ...(r.kind === "run" ? [box(r.id), " "] : []),
      el("a", { href: r.kind === "watch" ? watchHref(r.id) : runHref(r.id), text: r.id })),
    el("td", { text: r.agent ?? "" }), el("td", { text: r.model ?? "" }),
    el("td", { text: r.dataset ?? "" }), el("td", { text: r.attempts }),
    el("td", { text: interval(r.accuracy) }), el("td", { text: r.unscored }),
    el("td", { class: "status", text: r.status + (r.kind === "watch" ? " (watch)" : "") }),
    el("td", { text: r.started ?? "" })));
  show(el("h1", { text: "Runs" }),
    el("p", { class: "controls" }, button, "pick two runs: the first picked is A, the other B"),
    table("runs-table", headers, rows));
}
