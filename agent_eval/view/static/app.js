// The router: the part of the URL after # names the page shown.
import { newRoute, showError } from "./common.js";
import { runView } from "./run.js";
import { runsView } from "./runs.js";
import { sampleView } from "./sample.js";

async function route() {
  newRoute();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  try {
    if (parts[0] === "run" && parts[2] === "sample") await sampleView(parts[1], parts.slice(3).join("/"));
    else if (parts[0] === "run") await runView(parts[1]);
    else await runsView();
  } catch (error) {
    showError(error);
  }
}

window.addEventListener("hashchange", route);
route();
