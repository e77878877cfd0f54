// An attempt with injections (its record's `benchmark`, as AgentDojo's reward writes it) on the
// sample page: the suite and user task, which injection task and attack, whether the injected
// goal was reached (the attack succeeded) and the tool call after which it held.
import { el, row } from "./common.js";

const GOAL = {
  true: ["goal-reached", "reached: the attack succeeded"],
  false: ["goal-held", "not reached"],
};

function goal(b) {
  if (b.attack == null) return [];
  const [cls, text] = GOAL[b.security] || ["goal-unchecked", "not checked"];
  return [row("injected goal", "injected-goal " + cls, text), row("reached by", "injection-call", callText(b.injection_call))];
}

function callText(call) {
  if (!call || !call.function) return "";
  const index = Number.isInteger(call.index) ? ` (call ${call.index})` : "";
  return `${call.function}(${JSON.stringify(call.args || {})})${index}`;
}

export function injection(b) {
  if (!b || b.suite == null || b.user_task == null) return [];
  const defence = b.defence == null ? [] : [row("defence", "injection-defence", b.defence)];
  return [el("h3", { text: "injection" }),
    el("table", { class: "verdict injection" },
      row("suite", "injection-suite", b.suite),
      row("user task", "injection-user-task", b.user_task),
      row("injection task", "injection-task", b.injection_task ?? "none"),
      row("attack", "injection-attack", b.attack ?? "none"),
      ...defence, ...goal(b))];
}
