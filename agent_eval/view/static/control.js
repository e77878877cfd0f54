// A running run's control, on its page, when the view was started with --control: its state
// (running or paused, in flight, the limit) and the buttons that act on it. The token comes
// from the address the view printed (?control=TOKEN), is kept for this tab, and goes in a
// header with every action: another site's page can neither read it nor send that header.
import { api, el, poll, runPath } from "./common.js";

const KEY = "agent-eval-control";
const HEADER = "X-Agent-Eval-Token";

// The token from the address, once, then out of it (no copy in the history or a bookmark).
function token() {
  const params = new URLSearchParams(location.search);
  const given = params.get("control");
  if (given) {
    sessionStorage.setItem(KEY, given);
    params.delete("control");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? "?" + rest : "") + location.hash);
  }
  return sessionStorage.getItem(KEY);
}
token();

async function act(id, body) {
  const response = await fetch(runPath(id) + "/control", {
    method: "POST", headers: { "Content-Type": "application/json", [HEADER]: token() },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error || response.statusText);
  return answer;
}

export function stateText(state) {
  const mode = state.stopping ? "stopping" : state.paused ? "paused" : "running";
  const parts = [mode, `${state.in_flight} in flight`, `at most ${state.limit} at once`,
    `${state.done}/${state.total} attempts done`];
  if (state.requeued) parts.push(`${state.requeued} requeued to play`);
  return parts.join(" · ");
}

export function controlPart(id) {
  const node = el("section", { id: "control-section", hidden: "" }, el("h2", { text: "Control" }));
  const status = el("p", { id: "control-state" });
  const said = el("p", { id: "control-message", class: "note" });
  const limit = el("input", { id: "control-limit", type: "number", min: "1", size: "5" });
  const show = (answer) => {
    if (answer.state) status.textContent = stateText(answer.state);
    said.textContent = answer.message ?? "";
  };
  const run = (body) => async () => {
    try { show(await act(id, body)); } catch (error) { said.textContent = String(error.message || error); }
  };
  const buttons = el("div", { class: "controls", id: "control-buttons" },
    el("button", { id: "control-pause", text: "Pause", onclick: run({ action: "pause" }) }),
    el("button", { id: "control-resume", text: "Resume", onclick: run({ action: "resume" }) }),
    el("button", { id: "control-cancel", text: "Cancel", onclick: run({ action: "cancel" }) }),
    el("button", { id: "control-requeue", text: "Requeue errors", onclick: run({ action: "requeue" }) }),
    limit,
    el("button", { id: "control-concurrency", text: "Set concurrency",
      onclick: () => run({ action: "concurrency", limit: Number(limit.value) })() }));
  node.append(status, buttons, said);
  const refresh = async () => {
    const answer = await api(runPath(id) + "/control");
    node.hidden = !answer.running;
    buttons.hidden = !(answer.enabled && token());
    if (answer.running) status.textContent = stateText(answer.state);
    if (answer.running && !limit.value) limit.value = answer.state.limit;
    return answer.running;
  };
  // Polled on its own while the run answers: a paused run writes nothing, and the page's
  // poll stops once the run's files have been still a while.
  let polled = false;
  const update = async () => {
    if (polled) return;
    polled = true;
    if (await refresh()) poll(refresh);
  };
  return { node, update };
}
