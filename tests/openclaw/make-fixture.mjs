// Regenerates tests/data/openclaw/: a state directory made by OpenClaw 2026.9.6's own
// importer from plant.mjs's sessions, every file zstd-compressed (`<path>.zst`), for the Rust
// tests (tests/it/openclaw.rs), which need no npm.
//
//   cd tests/openclaw && npm ci --ignore-scripts && node make-fixture.mjs
//
// Left out: the lock files under tmp/, the SQLite -shm and (empty, checkpointed) -wal files,
// the quarantine database and the failure report's Markdown copy. The manifests keep the
// absolute paths of the temporary directory the importer ran in; treelog re-roots them.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, mkdirSync, writeFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { constants, zstdCompressSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "data", "openclaw");
const root = mkdtempSync(join(tmpdir(), "treelog-openclaw-fixture-"));
execFileSync(process.execPath, [join(here, "plant.mjs"), root], { stdio: "inherit" });
const state = join(root, ".openclaw");
try {
  execFileSync(
    process.execPath,
    [join(here, "node_modules", "openclaw", "openclaw.mjs"), "doctor", "--session-sqlite", "import", "--session-sqlite-all-agents", "--json"],
    { env: { ...process.env, HOME: root, OPENCLAW_STATE_DIR: state }, stdio: ["ignore", "ignore", "inherit"] },
  );
} catch (error) {
  // The importer exits 1 for the dup-id agent's issue; the run is complete all the same.
  if (error.status !== 1) throw error;
}

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* files(path);
    else yield path;
  }
}

const skipped = (name) =>
  name.startsWith("tmp/") || /-(shm|wal)$/.test(name) || name.endsWith(".failure.md") || name.endsWith("quarantine.sqlite");
rmSync(out, { recursive: true, force: true });
let total = 0;
for (const path of files(state)) {
  const name = relative(state, path);
  if (skipped(name)) continue;
  const packed = zstdCompressSync(readFileSync(path), { params: { [constants.ZSTD_c_compressionLevel]: 19 } });
  mkdirSync(dirname(join(out, name)), { recursive: true });
  writeFileSync(join(out, `${name}.zst`), packed);
  total += packed.length;
  console.log(`${name}: ${statSync(path).size} -> ${packed.length} bytes`);
}
console.log(`tests/data/openclaw: ${total} bytes`);
rmSync(root, { recursive: true, force: true });
