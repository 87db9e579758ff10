// `node --import treelog/pi-hook <pi>/dist/cli.js [pi's arguments]`: pi's unbundled CLI with
// treelog's SessionManager in place of pi's, without the treelog-pi launcher. pi is the
// package holding the main script (or TREELOG_PI_ROOT); its version is checked as treelog-pi
// checks it (--unsupported-pi, taken out of pi's arguments, runs another anyway). pi's bundled
// bin (dist/bundle/cli.js) holds its own copy of the SessionManager and is refused.
import { dirname, join, resolve } from "node:path";

import { UNSUPPORTED_FLAG, checkPi, enableCompileCache, fail, isPiBundle, piPackageAbove, redirectSessionManager, takeFlag } from "./hook/pi.mjs";

const PROGRAM = "treelog/pi-hook";
enableCompileCache();
const main = process.argv[1] ? resolve(process.argv[1]) : undefined;
const root = process.env.TREELOG_PI_ROOT ? resolve(process.env.TREELOG_PI_ROOT) : main && piPackageAbove(dirname(main));
if (!root) {
  fail(PROGRAM, `${main ?? "the main script"} is not inside pi's package (@earendil-works/pi-coding-agent); run <pi>/dist/cli.js or set TREELOG_PI_ROOT`);
}
if (main && isPiBundle(main, root)) {
  fail(PROGRAM, `${main} is pi's bundle, which holds its own SessionManager; run ${join(root, "dist/cli.js")} instead`);
}
const { found: allowUnsupported, args } = takeFlag(process.argv.slice(2), UNSUPPORTED_FLAG);
const version = checkPi(PROGRAM, root, { allowUnsupported });
process.argv.splice(2, process.argv.length - 2, ...args);
redirectSessionManager(root, { version });
