// `import ... from "treelog/pi"`: treelog's own module (index.js), unchanged. Only its types
// differ from `treelog`'s: pi.d.ts borrows pi-coding-agent's, so pi's functions take this
// SessionManager without a cast.
export * from "./index.js";
