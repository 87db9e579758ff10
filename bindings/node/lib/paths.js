// Paths as pi resolves them: `~`, file URLs, the agent directory and pi's default session
// directory of a cwd.
import { existsSync, mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, posix, resolve as nodeResolve, win32 } from "node:path";
import { fileURLToPath } from "node:url";

export function normalizePath(input) {
  if (input === "~") return homedir();
  if (input.startsWith("~/")) return join(homedir(), input.slice(2));
  if (/^file:\/\//.test(input)) return fileURLToPath(input);
  return input;
}

export function resolvePath(input, baseDir = process.cwd()) {
  const normalized = normalizePath(input);
  return isAbsolute(normalized) ? nodeResolve(normalized) : nodeResolve(normalizePath(baseDir), normalized);
}

export function pathsEqual(left, right) {
  const api = process.platform === "win32" ? win32 : posix;
  const key = (path) => (api === win32 ? api.resolve(path).toLowerCase() : api.resolve(path));
  return key(left) === key(right);
}

export function getAgentDir() {
  const envDir = process.env.PI_CODING_AGENT_DIR;
  return envDir ? normalizePath(envDir) : join(homedir(), ".pi", "agent");
}

export function getDefaultSessionDirPath(cwd, agentDir = getAgentDir()) {
  const safePath = `--${resolvePath(cwd).replace(/^[/\\]/, "").replace(/[/\\:]/g, "-")}--`;
  return join(resolvePath(agentDir), "sessions", safePath);
}

export function getDefaultSessionDir(cwd, agentDir = getAgentDir()) {
  const sessionDir = getDefaultSessionDirPath(cwd, agentDir);
  if (!existsSync(sessionDir)) mkdirSync(sessionDir, { recursive: true });
  return sessionDir;
}

