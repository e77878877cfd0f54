// A sample's page: the question once, the original it perturbs or its variants, then every
// attempt side by side, each with its answer against the gold, its agreement with the others
// and its whole trajectory (a session's by turn), after what the model was given: its system
// prompt and tools, folded; an attempt with injections (AgentDojo's) says which and how it went,
// one BFCL scored says what its checker found.
import { api, content, el, num, outcome, row, runHref, runPath, show, table } from "./common.js";
import { checker } from "./checker.js";
import { injection } from "./injection.js";
import { continuityCell } from "./tokens.js";
import { variantLinks } from "./robustness.js";

// Every message comes in one shape, whichever its runner recorded (agent_eval/results/messages.py):
// {role, content, tool_calls: [{id, name, arguments}], call_id}, a tool's output of role `tool`.
const callsOf = (m) => m.tool_calls;

// A tool's output, with the id of the call it answers; null for any other message.
const outputOf = (m) => (m.role === "tool" ? { id: m.call_id, output: m.content } : null);

function toolCall(call, result) {
  return el("div", { class: "message tool-call" },
    el("span", { class: "role", text: "tool call " + (call.name || "") }),
    el("pre", { class: "tool-args", text: content(call.arguments) }),
    ...(result === undefined ? [] : [toolOutput(result)]));
}

function toolOutput(result) {
  return el("div", { class: "message tool-output" },
    el("span", { class: "role", text: "tool output" }), el("pre", { class: "tool-result", text: content(result) }));
}

// Each call shows with its result beside it; a result no call claims shows where it stands.
function messages(list) {
  const outputs = new Map(list.map(outputOf).filter((o) => o && o.id != null).map((o) => [o.id, o.output]));
  const claimed = new Set(list.flatMap(callsOf).map((c) => c.id).filter((id) => outputs.has(id)));
  const nodes = [];
  for (const m of list) {
    const output = outputOf(m);
    if (output) {
      if (!claimed.has(output.id)) nodes.push(toolOutput(output.output));
      continue;
    }
    const calls = callsOf(m);
    if (m.reasoning) nodes.push(folded("reasoning", "reasoning", el("pre", { text: m.reasoning })));
    if (!calls.length || (m.content != null && m.content !== "")) {
      nodes.push(el("div", { class: "message role-" + m.role },
        el("span", { class: "role", text: m.role }), el("pre", { text: content(m.content) })));
    }
    nodes.push(...calls.map((c) => toolCall(c, outputs.get(c.id))));
  }
  return el("div", { class: "messages" }, ...nodes);
}

// A session's messages split into turns: each user message after the first starts the next.
function byTurn(list) {
  const turns = [[]];
  for (const m of list) {
    if (m.role === "user" && turns[turns.length - 1].some((x) => x.role === "user")) turns.push([]);
    turns[turns.length - 1].push(m);
  }
  return turns;
}

// A system prompt and the tools' names, descriptions and parameter schemas run to hundreds of
// tokens: each folds under a line that says what it holds.
function folded(cls, summary, ...inside) {
  return el("details", { class: cls }, el("summary", { text: summary }), ...inside);
}

function toolDefinition(tool) {
  return el("div", { class: "tool-definition" },
    el("span", { class: "role tool-name", text: tool.name }),
    el("p", { class: "tool-description", text: tool.description || "" }),
    ...(tool.parameters == null ? [] : [el("pre", { class: "tool-parameters", text: content(tool.parameters) })]));
}

function setupOf(setup, calls) {
  const prompt = setup.system_prompt;
  const words = (prompt || "").split(/\s+/).filter(Boolean).length;
  const tools = setup.tools || [];
  return el("div", { class: "setup" },
    ...(calls ? [el("p", { class: "setup-calls", text: "given to model calls " + calls.join(", ") })] : []),
    prompt == null ? el("p", { class: "note", text: "no system prompt" })
      : folded("system-prompt", `system prompt (${words} ${words === 1 ? "word" : "words"})`, el("pre", { text: prompt })),
    tools.length ? folded("tools", "tools: " + tools.map((t) => t.name).join(", "), ...tools.map(toolDefinition))
      : el("p", { class: "note", text: "no tools" }));
}

// Each distinct system prompt and tool set the attempt's model calls were given; when there are
// several, each says which calls were given it.
function given(t) {
  const setups = t.setups || [];
  if (!setups.length) {
    return el("div", { class: "setups" },
      el("p", { class: "note", text: "the system prompt and tools the model was given are not in this record" }));
  }
  const calls = (t.model_calls || []).map((c, i) => [c.setup, i]);
  const callsOf = (n) => calls.filter(([setup]) => setup === n).map(([, i]) => i);
  return el("div", { class: "setups" }, ...setups.map((s, n) => setupOf(s, setups.length > 1 ? callsOf(n) : null)));
}


function turns(record, body) {
  const specs = body.turns || [];
  const rewards = record.turn_rewards || [];
  const answers = record.turn_answers || [];
  const challenges = new Set(record.challenge_turns || []);
  const groups = byTurn((record.trajectory || {}).messages || []);
  const count = Math.max(rewards.length, specs.length, groups.length);
  return el("div", { class: "turns" }, ...Array.from({ length: count }, (_, t) => {
    const spec = specs[t] || {};
    const challenge = challenges.has(t) || spec.challenge === true;
    const said = groups[t] && groups[t].length ? [messages(groups[t])] : [
      el("div", { class: "message role-user" }, el("span", { class: "role", text: "user" }), el("pre", { text: spec.user ?? "" })),
      el("p", { class: "not-reached", text: "not reached" })];
    return el("section", { class: "turn" + (challenge ? " challenge" : ""), "data-turn": t },
      el("h4", { text: `turn ${t}` + (challenge ? " · challenge" : "") }),
      el("table", { class: "verdict" }, row("answer", "turn-answer", answers[t] ?? ""),
        row("gold", "turn-gold", spec.expected ?? ""), row("reward", "turn-reward", num(rewards[t]))),
      ...said);
  }));
}

// A command runner's program (agent_eval/view/messages.py hands it in one shape): how it
// ended, its output's last lines, its check, and what it changed in its working directory as a
// diff whose added and removed lines are coloured. Every piece goes in as text.
function program(p) {
  if (!p) return [];
  const check = p.check;
  const checked = check ? [row("check", "program-check", checkSays(check))] : [];
  const checkTails = check ? [tail("check stdout", "check-stdout", check.stdout_tail),
    tail("check stderr", "check-stderr", check.stderr_tail)] : [];
  return [el("h3", { text: "program" }),
    el("table", { class: "verdict program" }, row("command", "program-command", p.command),
      row("ended", "program-ending", p.ending), row("duration s", "program-duration", num(p.duration_s)),
      row("answer from", "program-answer-source", p.answer_source ?? ""), ...checked),
    tail("stdout", "program-stdout", p.stdout_tail), tail("stderr", "program-stderr", p.stderr_tail),
    ...checkTails, diff(p.diff_lines)];
}

const checkSays = (c) => `${c.command} · ${c.exit_code == null ? "no exit code" : "exit " + c.exit_code}` +
  ` · score ${c.score == null ? "none" : num(c.score)}`;

function tail(label, cls, text) {
  return el("div", { class: "message program-tail" }, el("span", { class: "role", text: label + " (last lines)" }),
    text ? el("pre", { class: cls, text }) : el("p", { class: "note " + cls, text: "empty" }));
}

function diff(lines) {
  if (!lines.length) return el("p", { class: "note diff-none", text: "no changes in its working directory" });
  return el("div", { class: "message program-diff" }, el("span", { class: "role", text: "changes (diff)" }),
    el("pre", { class: "diff" }, ...lines.map(([kind, line]) => el("span", { class: "diff-" + kind, text: line }))));
}

function agreement(a) {
  if (a.others === 0) return "the only attempt";
  if (!a.answered) return "no answer to agree with";
  return `agrees with ${a.same} of ${a.others} ${a.others === 1 ? "other" : "others"}` + vote(a);
}

function vote(a) {
  if (a.majority) return " (majority)";
  if (!a.tied) return "";
  const others = a.tied - 1;
  return ` (tied for the majority with ${others} other ${others === 1 ? "answer" : "answers"})`;
}

function attempt(id, body, record, n) {
  const t = record.trajectory || {};
  const session = record.turn_rewards != null;
  const gold = Array.isArray(body.gold) ? body.gold[body.gold.length - 1] : body.gold;
  const tokensUrl = (k) => `${runPath(id)}/records/${body.records[n]}/calls/${k}/tokens`;
  const calls = (t.model_calls || []).map((c, i) => el("tr", { class: "model-call" },
    el("td", { text: i }), el("td", { text: num(c.latency_s) }),
    el("td", { text: `${c.prompt_tokens} + ${c.completion_tokens}` }), el("td", { text: c.worker }),
    continuityCell(c.continuity, tokensUrl(i))));
  const tools = (t.tool_calls || []).map((c) => el("div", { class: "tool-call" },
    el("span", { class: "role", text: c.name }), el("pre", { class: "tool-args", text: c.arguments }),
    el("pre", { class: "tool-result", text: content(c.result) })));
  const error = record.error || t.error;
  return el("section", { id: "attempt-" + record.attempt, class: "attempt " + outcome(record) },
    el("h2", { text: `attempt ${record.attempt}` }),
    el("table", { class: "verdict" },
      row("answer", "answer", record.answer ?? ""),
      row("gold", "gold", gold ?? ""),
      row("agreement", "agreement", agreement(body.agreements[n])),
      row("reward", "reward", num(record.reward)),
      row("correct", "", record.correct == null ? "unscored" : String(record.correct)),
      row("latency s", "", num(record.latency_s)),
      ...(error && error.limit ? [row("limit exceeded", "limit", error.limit)] : [])),
    ...(error ? [el("pre", { class: "error", text: content(error) })] : []),
    ...injection(record.benchmark),
    ...checker(record.benchmark),
    ...program(t.program),
    el("h3", { text: "model calls" }),
    table("", ["#", "latency s", "tokens", "worker", "continuity"].map((h) => el("th", { text: h })), calls),
    el("h3", { text: "tool calls" }), ...tools,
    el("h3", { text: session ? "turns" : "messages" }), given(t),
    session ? turns(record, body) : messages(t.messages || []),
    el("h3", { text: "final output" }), el("pre", { class: "final-output", text: content(t.final_output) }));
}

// Marks the attempt (and turn) the route names and scrolls it into view.
function focusOn(focus) {
  const found = focus && focus.attempt != null && document.getElementById("attempt-" + focus.attempt);
  if (!found) return;
  found.classList.add("focused");
  const turn = focus.turn == null ? null : found.querySelector(`.turn[data-turn="${focus.turn}"]`);
  if (turn) turn.classList.add("focused");
  (turn || found).scrollIntoView({ block: "start", inline: "nearest" });
}

export async function sampleView(id, sampleId, focus) {
  const body = await api(runPath(id) + "/samples/" + encodeURIComponent(sampleId));
  show(el("p", {}, el("a", { href: runHref(id), text: "← " + id })),
    el("h1", { text: sampleId }),
    ...variantLinks(id, body),
    el("pre", { id: "question", text: body.question ?? "" }),
    ...(body.gold_note ? [el("p", { id: "gold-note", class: "note", text: "no gold answer: " + body.gold_note })] : []),
    el("div", { id: "attempts", class: "attempts" }, ...body.attempts.map((r, n) => attempt(id, body, r, n))));
  focusOn(focus);
}
