// The router: the part of the URL after # names the page shown.
import { newRoute, showError } from "./common.js";
import { compareView } from "./compare.js";
import { runView } from "./run.js";
import { runsView } from "./runs.js";
import { sampleView } from "./sample.js";
import { watchView } from "./watch.js";

// The number after `name` in the route's parts (from the fourth on), or null.
function number(parts, name) {
  const at = parts.indexOf(name, 4);
  return at > 0 && /^\d+$/.test(parts[at + 1] || "") ? Number(parts[at + 1]) : null;
}

async function route() {
  newRoute();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[2] === "sample") {
      const focus = { attempt: number(parts, "attempt"), turn: number(parts, "turn") };
      await sampleView(parts[1], parts[3], focus);
    }
    else if (parts[0] === "run") await runView(parts[1]);
    else if (parts[0] === "watch") await watchView(parts[1]);
    else if (parts[0] === "compare") await compareView(parts[1], parts[2]);
    else await runsView();
  } catch (error) {
    showError(error);
  }
}

window.addEventListener("hashchange", route);
route();
