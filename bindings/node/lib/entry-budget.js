// The size budget per entry (option `maxEntryBytes`, or the environment's
// TREELOG_MAX_ENTRY_BYTES; off by default): an append whose line is longer is kept, as every
// append is, and reported once per source as a process warning with code TREELOG_ENTRY_LARGE.
// The source is what `treelog stats` splits bytes by: an extension's customType (custom and
// custom_message entries), a tool's name (tool results; bashExecution for `!` commands), else
// the message's role.
import { codedError } from "./errors.js";

/** Bytes an entry's line holds besides its payload and source name, at most (id, parent, time). */
const ENVELOPE_BYTES_MAX = 256;

/** The budget of `value` (an option, else the environment's), or undefined when off. */
export function budgetOf(value = process.env.TREELOG_MAX_ENTRY_BYTES || undefined) {
  if (value === undefined) return undefined;
  const budget = typeof value === "string" ? Number(value) : value;
  if (!Number.isSafeInteger(budget) || budget <= 0) {
    throw codedError("TREELOG_INVALID_INPUT", `maxEntryBytes must be a positive integer, not ${JSON.stringify(value)}`);
  }
  return budget;
}

/** The source a message entry's bytes are counted under. */
export function messageSource(message) {
  if (message?.role === "toolResult") return `tool ${message.toolName ?? "(none)"}`;
  if (message?.role === "bashExecution") return "tool bashExecution";
  return `role ${message?.role ?? "(none)"}`;
}

/** Whether a payload of `payloadJson` under `source` may make a line over `budget`. */
export function mayExceed(budget, source, payloadJson) {
  return budget !== undefined && Buffer.byteLength(payloadJson) + Buffer.byteLength(source) + ENVELOPE_BYTES_MAX > budget;
}

/** Sources warned of in this process: each is reported once. */
const warned = new Set();

/** Reports the line of `bytes` under `source` if it is over `budget`, once per source. */
export function reportLargeEntry(budget, source, bytes) {
  if (bytes <= budget || warned.has(source)) return;
  warned.add(source);
  process.emitWarning(`treelog: an entry of ${bytes} bytes from ${source} is over the ${budget}-byte budget per entry (TREELOG_MAX_ENTRY_BYTES); it was kept`, {
    code: "TREELOG_ENTRY_LARGE",
    detail: JSON.stringify({ source, bytes, budget }),
  });
}
