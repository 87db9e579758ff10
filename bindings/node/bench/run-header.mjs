// What every bench report starts with: the machine, Node, the date, and the command that ran.
import { cpus, totalmem } from "node:os";

export function runHeader() {
  return {
    machine: `${cpus().length} cores (${cpus()[0]?.model ?? "unknown cpu"}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB`,
    node: process.version,
    date: new Date().toISOString(),
    command: process.env.npm_lifecycle_event === "bench"
      ? `npm run bench -- ${process.argv.slice(2).join(" ")}`
      : [process.execPath, ...process.execArgv, ...process.argv.slice(1)].join(" "),
  };
}
