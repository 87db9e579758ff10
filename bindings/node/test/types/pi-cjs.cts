// (b) The same from a CommonJS module (`module: node16`): `treelog/pi` is required; pi, an ES
// module only (its package exports no `require` entry), is imported dynamically.
import treelogPi = require("treelog/pi");

export async function startSession(file: string) {
  const { createAgentSession } = await import("@earendil-works/pi-coding-agent");
  const { session } = await createAgentSession({ sessionManager: treelogPi.SessionManager.open(file) });
  return session;
}

export function entries(file: string): treelogPi.SessionEntry[] {
  return treelogPi.SessionManager.open(file).getEntries();
}
