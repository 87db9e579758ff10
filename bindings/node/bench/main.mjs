// The script of `npm run bench`: `npm run bench -- agent ...` runs agent.mjs (pi 1.6.0's agent
// on pi's SessionManager and on treelog's); anything else runs bench.mjs (open + context,
// getEntries, getTree, list), with the arguments as given.
await import(process.argv[2] === "agent" ? "./agent.mjs" : "./bench.mjs");
