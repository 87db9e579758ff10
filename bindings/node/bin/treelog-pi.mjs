#!/usr/bin/env node
// treelog-pi [pi's own arguments]: runs the pi you have installed (TREELOG_PI_ROOT, else this
// project's node_modules, else the global one) in this process, with treelog's SessionManager
// in place of pi's in every module of pi that imports it. Arguments, environment, stdio, TTY,
// signals and exit code are pi's own. pi 1.6.x only; --unsupported-pi runs another anyway.
import { pathToFileURL } from "node:url";
import { join } from "node:path";

import { UNSUPPORTED_FLAG, checkPi, enableCompileCache, fail, findPi, redirectSessionManager, takeFlag } from "../hook/pi.mjs";

const PROGRAM = "treelog-pi";
enableCompileCache();
const { found: allowUnsupported, args } = takeFlag(process.argv.slice(2), UNSUPPORTED_FLAG);
const pi = findPi();
if (!pi) {
  fail(PROGRAM, "pi (@earendil-works/pi-coding-agent) not found in this project's node_modules, on PATH or in the global npm root; install it or set TREELOG_PI_ROOT to its folder");
}
const version = checkPi(PROGRAM, pi.root, { allowUnsupported });
redirectSessionManager(pi.root, { version });
// pi reads its arguments from process.argv.slice(2), and its entry point from process.argv[1].
const cli = join(pi.root, "dist/cli.js");
process.argv = [process.argv[0], cli, ...args];
await import(pathToFileURL(cli).href);
