// A sample's page: every attempt side by side, each with its whole trajectory.
import { api, content, el, num, runHref, runPath, show, table } from "./common.js";

function message(m) {
  if (m.type === "function_call") return el("div", { class: "message tool-call" },
    el("span", { class: "role", text: "tool call " + (m.name || "") }),
    el("pre", { class: "tool-args", text: m.arguments || "" }));
  if (m.type === "function_call_output") return el("div", { class: "message tool-output" },
    el("span", { class: "role", text: "tool output" }), el("pre", { class: "tool-result", text: content(m.output) }));
  return el("div", { class: "message role-" + (m.role || "other") },
    el("span", { class: "role", text: m.role || m.type || "message" }), el("pre", { text: content(m.content) }));
}

function attempt(record, n) {
  const t = record.trajectory || {};
  const calls = (t.model_calls || []).map((c, i) => el("tr", { class: "model-call" },
    el("td", { text: i }), el("td", { text: num(c.latency_s) }),
    el("td", { text: `${c.prompt_tokens} + ${c.completion_tokens}` }), el("td", { text: c.worker })));
  const tools = (t.tool_calls || []).map((c) => el("div", { class: "tool-call" },
    el("span", { class: "role", text: c.name }), el("pre", { class: "tool-args", text: c.arguments }),
    el("pre", { class: "tool-result", text: content(c.result) })));
  const error = record.error || t.error;
  return el("section", { id: "attempt-" + n, class: "attempt " + (record.correct ? "correct" : "wrong") },
    el("h2", { text: `attempt ${record.attempt}` }),
    el("table", { class: "verdict" },
      el("tr", {}, el("th", { text: "answer" }), el("td", { class: "answer", text: record.answer ?? "" })),
      ...("gold" in record ? [el("tr", {}, el("th", { text: "gold" }), el("td", { class: "gold", text: content(record.gold) }))] : []),
      el("tr", {}, el("th", { text: "reward" }), el("td", { text: num(record.reward) })),
      el("tr", {}, el("th", { text: "correct" }), el("td", { text: String(record.correct) })),
      el("tr", {}, el("th", { text: "latency s" }), el("td", { text: num(record.latency_s) }))),
    ...(error ? [el("pre", { class: "error", text: content(error) })] : []),
    el("h3", { text: "model calls" }),
    table("", ["#", "latency s", "tokens", "worker"].map((h) => el("th", { text: h })), calls),
    el("h3", { text: "tool calls" }), ...tools,
    el("h3", { text: "messages" }), el("div", { class: "messages" }, ...(t.messages || []).map(message)),
    el("h3", { text: "final output" }), el("pre", { class: "final-output", text: content(t.final_output) }));
}

export async function sampleView(id, sampleId) {
  const body = await api(runPath(id) + "/samples/" + encodeURIComponent(sampleId));
  show(el("p", {}, el("a", { href: runHref(id), text: "← " + id })),
    el("h1", { text: sampleId }),
    el("div", { id: "attempts", class: "attempts" }, ...body.attempts.map(attempt)));
}
