// (b) The same in plain CommonJS JavaScript, checked with checkJs: `require("treelog/pi")`.
"use strict";
const { SessionManager } = require("treelog/pi");

/** @param {string} file */
async function startSession(file) {
  const { createAgentSession } = await import("@earendil-works/pi-coding-agent");
  const { session } = await createAgentSession({ sessionManager: SessionManager.open(file) });
  return session;
}

module.exports = { startSession };
