// node bench/tui-screen.mjs FILE: the screen of pi's terminal UI after resuming FILE, under pi's
// own bundled bin and under treelog-pi, each on a copy, in tmux at 120x40 with the fake model
// of the CLI tests (test/cli/fixture.mjs), and how long each took until the screen settled.
import { closeSync, fstatSync, mkdirSync, openSync, readSync } from "node:fs";
import { join } from "node:path";

import { MODEL, MODEL_ARGS, command, copySession, makeAgentDir, piEnv, startFakeModel, startTmux, tempDir } from "../test/cli/fixture.mjs";

const [source] = process.argv.slice(2);

/** The entries of the file's last 4 MiB (a session of 1M entries is longer than a string). */
function lastEntries(file) {
  const fd = openSync(file, "r");
  try {
    const size = fstatSync(fd).size;
    const length = Math.min(size, 4 << 20);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const lines = buffer.toString("utf8").split("\n").filter(Boolean);
    if (length < size) lines.shift(); // the first may be cut
    return lines.map((line) => JSON.parse(line));
  } finally {
    closeSync(fd);
  }
}
const root = tempDir("treelog-screen-");
const model = await startFakeModel();
const project = join(root, "project");
mkdirSync(project);
const env = piEnv(root, makeAgentDir(root, model.baseUrl), { TERM: "xterm-256color", LANG: "C.UTF-8", LC_ALL: "C.UTF-8" });
const lastMessage = lastEntries(source).findLast((entry) => entry.type === "message").message;
const lastText = (typeof lastMessage.content === "string" ? lastMessage.content : lastMessage.content.find((part) => part.type === "text").text).slice(0, 40);
const footer = (screen) => screen.split("\n").some((line) => line.endsWith(MODEL.id) && line.includes("/"));
try {
  for (const side of ["pi", "treelog-pi"]) {
    const file = join(root, side, "session.jsonl");
    await copySession(source, file, project);
    const [program, args] = command(side, [...MODEL_ARGS, "--session", file]);
    const start = Date.now();
    const tui = startTmux({ dir: root, name: `${side.replace("-", "")}screen`, file: program, args, cwd: project, env });
    try {
      const screen = await tui.waitFor((text) => footer(text) && text.includes(lastText), { what: `${side} resumed`, stableMs: 800, timeoutMs: 300_000 });
      console.log(`==== ${side}: resumed (${Date.now() - start} ms until the screen settled, 800 ms of it waiting for stability)`);
      console.log(screen);
    } finally {
      tui.kill();
    }
  }
} finally {
  await model.close();
}
