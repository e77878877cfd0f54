// An attempt's model calls on the sample page: each call's continuity (whether its prompt begins
// with the tokens of the earlier call of its conversation, or where they first differ: drift),
// and its tokens on demand, fetched when unfolded: an attempt's run to many thousands. A
// completion token is shaded by its probability, exp(logprob); hovering any token shows its id
// and logprob. The record keeps token ids, not their text, so ids are what is shown.
import { api, el } from "./common.js";

function continuityText(c) {
  if (!c) return "no tokens recorded";
  if (c.previous == null) return "starts a conversation";
  if (!c.drift) return `continues call ${c.previous}`;
  const d = c.drift;
  return `drifts from call ${c.previous} at token ${d.index}: ${d.expected} sent back as ${d.found}`;
}

const continuityClass = (c) => "continuity " + (!c ? "untokenized" : c.drift ? "drift" : "continues");

// Low probability, strong shade: a near-certain token stays almost white.
function shade(span, logprob) {
  const p = Math.exp(logprob);
  span.style.backgroundColor = `rgba(230, 110, 0, ${(0.85 * (1 - p)).toFixed(3)})`;
  span.dataset.p = p.toFixed(4);
}

function token(id, cls, hover) {
  return el("span", { class: "token " + cls, title: hover, text: id });
}

function promptTokens(ids, drift) {
  const at = drift ? drift.index : -1;
  return el("div", { class: "prompt-tokens" }, el("span", { class: "role", text: "prompt" }),
    ...ids.map((id, i) => i === at
      ? token(id, "prompt drift-at", `id ${id} · position ${i} · the earlier call had ${drift.expected} here`)
      : token(id, "prompt" + (at >= 0 && i > at ? " after-drift" : ""), `id ${id} · position ${i}`)));
}

function completionTokens(ids, logprobs) {
  return el("div", { class: "completion-tokens" }, el("span", { class: "role", text: "completion" }),
    ...ids.map((id, i) => {
      const logprob = logprobs ? logprobs[i] : null;
      if (logprob == null) return token(id, "completion", `id ${id} · no logprob`);
      const span = token(id, "completion", `id ${id} · logprob ${logprob.toFixed(4)} · p ${Math.exp(logprob).toFixed(4)}`);
      shade(span, logprob);
      return span;
    }));
}

async function showTokens(details, url) {
  if (details.dataset.loaded) return;
  details.dataset.loaded = "1";
  try {
    const t = await api(url);
    const drift = t.continuity && t.continuity.drift;
    details.append(promptTokens(t.prompt_ids, drift), completionTokens(t.completion_ids, t.logprobs),
      ...(t.logprobs ? [] : [el("p", { class: "note", text: "no logprobs recorded" })]));
  } catch (error) {
    details.append(el("p", { class: "error", text: String(error.message || error) }));
  }
}

// A model call's continuity cell: whether it continues the earlier call of its conversation or
// where it drifts, and its tokens folded; `url` is where they are asked for.
export function continuityCell(c, url) {
  return el("td", { class: continuityClass(c) }, continuityText(c), ...tokensOf(c, url));
}

function tokensOf(c, url) {
  if (!c) return [];
  const details = el("details", { class: "call-tokens" },
    el("summary", { text: `tokens: ${c.prompt} prompt + ${c.completion} completion` }));
  details.addEventListener("toggle", () => details.open && showTokens(details, url));
  return [details];
}
