#!/usr/bin/env node
// The platform packages under npm/, one per napi target, as napi-rs lays them out
// (`napi create-npm-dirs` makes the same shape): each folder's package.json names the addon
// `treelog.<dir>.node` and the os/cpu/libc npm matches on install. npm/platforms.json is the
// one list of targets; package.json's `napi.targets` and the release workflow's matrix
// (.github/workflows/release.yml) must name the same ones.
//
//   node npm/platform-dirs.mjs          writes every folder (package.json, README.md, licences)
//   node npm/platform-dirs.mjs --check  exits 1, naming the difference, when a folder, the
//                                       napi targets or the workflow's matrix disagree
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = join(dirname(fileURLToPath(import.meta.url)), "..");
const WORKFLOW = join(PACKAGE, "..", "..", ".github", "workflows", "release.yml");
const platforms = JSON.parse(readFileSync(join(PACKAGE, "npm", "platforms.json"), "utf8"));
const main = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));

function manifest(platform) {
  const addon = `treelog.${platform.dir}.node`;
  const manifest = {
    name: `treelog-${platform.dir}`,
    version: main.version,
    description: `The ${platform.target} native addon of treelog (pi-coding-agent's SessionManager on treelog); installed by treelog, not by hand`,
    license: main.license,
    os: [platform.os],
    cpu: [platform.cpu],
  };
  if (platform.libc) manifest.libc = [platform.libc];
  Object.assign(manifest, { main: addon, files: [addon, "LICENSE-MIT", "LICENSE-APACHE"], engines: main.engines });
  return `${JSON.stringify(manifest, null, 2)}\n`;
}

const readme = (platform) => `# \`treelog-${platform.dir}\`

The **${platform.target}** (${platform.label}) native addon of \`treelog\`.
\`npm install treelog\` installs it as an optional dependency on a matching machine; its
\`native.cjs\` loads it when no addon was built beside the package.

The \`.node\` file is not kept in the repository: a release copies the one \`npm run build\` makes
in \`bindings/node\` into this folder (what \`napi artifacts\` does) before \`npm publish\` here;
\`test/pack.sh\` does the same in a temporary copy to check the install.
`;

const files = (platform) => {
  const dir = join(PACKAGE, "npm", platform.dir);
  return [
    [join(dir, "package.json"), manifest(platform)],
    [join(dir, "README.md"), readme(platform)],
  ];
};

if (process.argv.includes("--check")) {
  const problems = [];
  for (const platform of platforms) {
    for (const [file, text] of files(platform)) {
      if (!existsSync(file) || readFileSync(file, "utf8") !== text) problems.push(`${file} is not what npm/platform-dirs.mjs writes`);
    }
    for (const licence of ["LICENSE-MIT", "LICENSE-APACHE"]) {
      const copy = join(PACKAGE, "npm", platform.dir, licence);
      if (!existsSync(copy) || !readFileSync(copy).equals(readFileSync(join(PACKAGE, licence)))) problems.push(`${copy} differs from ${licence}`);
    }
  }
  const targets = platforms.map((platform) => platform.target);
  if (JSON.stringify(main.napi?.targets) !== JSON.stringify(targets)) {
    problems.push(`package.json napi.targets is ${JSON.stringify(main.napi?.targets)}, not ${JSON.stringify(targets)}`);
  }
  const workflow = existsSync(WORKFLOW) ? readFileSync(WORKFLOW, "utf8") : "";
  for (const target of targets) {
    if (!new RegExp(`target: ${target}\\s*$`, "m").test(workflow)) problems.push(`${WORKFLOW} builds no ${target}`);
  }
  for (const problem of problems) console.error(`platform-dirs: ${problem}`);
  process.exit(problems.length > 0 ? 1 : 0);
}

for (const platform of platforms) {
  mkdirSync(join(PACKAGE, "npm", platform.dir), { recursive: true });
  for (const [file, text] of files(platform)) writeFileSync(file, text);
  for (const licence of ["LICENSE-MIT", "LICENSE-APACHE"]) copyFileSync(join(PACKAGE, licence), join(PACKAGE, "npm", platform.dir, licence));
}
