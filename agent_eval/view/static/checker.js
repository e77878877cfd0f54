// What BFCL's checker found on an attempt (its record's `benchmark`, as BFCL's reward writes
// it) on the sample page: the entry's category and, when the answer was wrong, why.
import { el, row } from "./common.js";

export function checker(b) {
  if (!b || b.category == null || !("error_type" in b)) return [];
  const why = b.error_type == null ? [row("error type", "checker-error-type", "none: accepted")]
    : [row("error type", "checker-error-type", b.error_type), row("error", "checker-error", b.error ?? "")];
  return [el("h3", { text: "checker" }),
    el("table", { class: "verdict checker" }, row("category", "checker-category", b.category), ...why)];
}
