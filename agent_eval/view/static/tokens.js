// An attempt's model calls on the sample page: each call's continuity (whether its prompt begins
// with the tokens of the earlier call of its conversation, or where they first differ: drift),
// and its tokens on demand, fetched when unfolded: an attempt's run to many thousands. A
// completion token is shaded by its probability, exp(logprob); hovering any token shows its
// text, id and logprob. The record keeps ids: the server adds their text where it can load the
// run's tokenizer, and where it cannot the ids are what is shown.
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

// Line ends and tabs written as escapes, so a token stays on its line and shows what it holds.
const visible = (text) => text.replace(/\n/g, "\\n").replace(/\r/g, "\\r").replace(/\t/g, "\\t");

// A token drawn as its text where it has one (null: the tokenizer lacks the id), else its id.
function token(id, text, cls, hover) {
  if (text == null) return el("span", { class: "token " + cls, title: hover, text: id });
  return el("span", { class: "token text " + cls, title: `${JSON.stringify(text)} · ${hover}`, text: visible(text) });
}

function promptTokens(ids, texts, drift) {
  const at = drift ? drift.index : -1;
  return el("div", { class: "prompt-tokens" }, el("span", { class: "role", text: "prompt" }),
    ...ids.map((id, i) => i === at
      ? token(id, texts[i], "prompt drift-at", `id ${id} · position ${i} · the earlier call had ${drift.expected} here`)
      : token(id, texts[i], "prompt" + (at >= 0 && i > at ? " after-drift" : ""), `id ${id} · position ${i}`)));
}

function completionTokens(ids, texts, logprobs) {
  return el("div", { class: "completion-tokens" }, el("span", { class: "role", text: "completion" }),
    ...ids.map((id, i) => {
      const logprob = logprobs ? logprobs[i] : null;
      if (logprob == null) return token(id, texts[i], "completion", `id ${id} · no logprob`);
      const span = token(id, texts[i], "completion", `id ${id} · logprob ${logprob.toFixed(4)} · p ${Math.exp(logprob).toFixed(4)}`);
      shade(span, logprob);
      return span;
    }));
}

function textNote(t) {
  const says = t.text ? `text by ${t.text.tokenizer}'s tokenizer; hover a token for its id` : `ids: ${t.text_note}`;
  return el("p", { class: "note tokens-text", text: says });
}

async function showTokens(details, url) {
  if (details.dataset.loaded) return;
  details.dataset.loaded = "1";
  try {
    const t = await api(url);
    const drift = t.continuity && t.continuity.drift;
    const text = t.text || { prompt: [], completion: [] };
    details.append(textNote(t), promptTokens(t.prompt_ids, text.prompt, drift),
      completionTokens(t.completion_ids, text.completion, t.logprobs),
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
