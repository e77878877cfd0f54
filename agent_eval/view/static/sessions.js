// A multi-turn run's session x turn heatmap: a row per attempt at a session, a cell per turn
// coloured by its reward, each cell a link to that turn of that attempt's transcript.
import { api, el, num, pagerControls, runPath, sampleHref } from "./common.js";

const PAGE = 50;

// The CSS class of a reward's colour: full, partial, none, or a turn never scored.
function shade(reward) {
  if (reward == null) return "reward-missing";
  return reward >= 1 ? "reward-full" : reward > 0 ? "reward-part" : "reward-none";
}

function cell(id, row, t) {
  const reward = row.turn_rewards[t];
  const challenge = row.challenge_turns.includes(t);
  const title = `${row.sample_id} attempt ${row.attempt}, turn ${t}: ` + (reward == null ? "unscored" : `reward ${num(reward)}`) +
    (challenge ? " (challenge)" : "");
  return el("td", { class: `cell ${shade(reward)}` + (challenge ? " challenge" : ""), "data-turn": t },
    el("a", { href: sampleHref(id, row.sample_id, row.attempt, t), title, text: num(reward, 1) }));
}

function grid(id, page) {
  const turns = Math.max(0, ...page.rows.map((r) => (r.turn_rewards || []).length));
  const headers = [el("th", { text: "session" }), el("th", { text: "attempt" }),
    ...Array.from({ length: turns }, (_, t) => el("th", { text: `turn ${t}` }))];
  const rows = page.rows.filter((r) => r.turn_rewards).map((r) => el("tr", { "data-sample": r.sample_id, "data-attempt": r.attempt },
    el("td", { text: r.sample_id }), el("td", { text: r.attempt }),
    ...r.turn_rewards.map((_, t) => cell(id, r, t))));
  return el("table", { id: "session-heatmap", class: "heatmap" },
    el("thead", {}, el("tr", {}, ...headers)), el("tbody", {}, ...rows));
}

async function load(id, offset) {
  const params = new URLSearchParams({ sort: "sample_id", offset, limit: PAGE });
  return api(runPath(id) + "/sessions?" + params);
}

// The heatmap as a part of the run page ({ node, update }): paged, redrawn at the page shown
// while the run is running; empty when the run's attempts are not sessions.
export function sessionsPart(id) {
  const node = el("section", { id: "sessions" });
  let shown = 0;
  let sessions = true; // until an attempt shows otherwise: a run's attempts are all alike
  const draw = async (offset) => {
    const page = await load(id, offset);
    if (page.rows.length && !page.rows.some((r) => r.turn_rewards)) sessions = false;
    if (!sessions || !page.rows.length) return;
    shown = offset;
    const text = `sessions ${offset + 1}–${Math.min(offset + PAGE, page.total)} of ${page.total}`;
    node.replaceChildren(el("h2", { text: "sessions by turn" }), grid(id, page),
      el("div", { class: "controls" }, ...pagerControls("sessions", offset, page.total, PAGE, text, draw)));
  };
  return { node, update: () => (sessions ? draw(shown) : null) };
}
