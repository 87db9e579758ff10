// The script of `npm run bench`: `npm run bench -- agent ...` runs agent.mjs (pi 1.6.0's agent
// on pi's SessionManager and on treelog's); `npm run bench -- cli ...` runs cli.mjs (pi's own
// CLI, its bundled bin against treelog-pi); anything else runs bench.mjs (open + context,
// getEntries, getTree, list), with the arguments as given.
const scripts = { agent: "./agent.mjs", cli: "./cli.mjs" };
await import(scripts[process.argv[2]] ?? "./bench.mjs");
