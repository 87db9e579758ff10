#!/usr/bin/env node
// `napi build --pipe "node npm/wrap-loader.cjs"` (package.json's build scripts) runs this on
// every file the build writes; it changes only native.cjs, the loader napi-rs generates
// (`--js native.cjs`), which lib/native.js requires (the package's one loader).
//
// That loader looks for the addon beside the package (`treelog.linux-x64-gnu.node`, what
// `npm run build` writes), then in the platform package (`treelog-linux-x64-gnu`, an optional
// dependency), and when neither loads it throws "Cannot find native binding. npm has a bug
// related to optional dependencies ...", which names neither the platform nor a way out. The
// generated code is kept as it is, inside a function; this wrapper calls it and turns any error
// it throws (none is thrown once an addon loads) into one that says which platform this is
// (process.platform, arch, libc), what treelog ships, and how to build the addon from source,
// with the loader's own error as its `cause`.
"use strict";
const { readFileSync, writeFileSync } = require("node:fs");
const { basename } = require("node:path");

const PLATFORMS = JSON.parse(readFileSync(require("node:path").join(__dirname, "platforms.json"), "utf8")).map(
  ({ dir, os, cpu, libc, label }) => ({ dir, os, cpu, libc, label }),
);

const MARK = "// treelog: napi-rs's generated loader, wrapped by npm/wrap-loader.cjs";

const wrapper = (generated) => `${MARK}
// (napi build --pipe): an error of the loader becomes one that names the platform and says how
// to build the addon from source. The generated code runs unchanged in generatedLoader below.

/** The platforms a release ships an addon for (npm/platforms.json, at build time). */
const PLATFORMS = ${JSON.stringify(PLATFORMS)};

function platformName() {
  let name = \`\${process.platform} \${process.arch}\`;
  if (process.platform === "linux") {
    let libc = "libc unknown";
    try {
      const { header } = process.report.getReport();
      if (header && header.glibcVersionRuntime) libc = \`glibc \${header.glibcVersionRuntime}\`;
    } catch {}
    if (libc === "libc unknown") {
      try {
        if (require("node:fs").readFileSync("/usr/bin/ldd", "utf8").includes("musl")) libc = "musl";
      } catch {}
    }
    name += \` \${libc}\`;
  }
  return name;
}

/** The first line of each error in the chain napi-rs's loader throws: what it tried, in order. */
function attempts(error) {
  const lines = [];
  for (let e = error && error.cause; e && lines.length < 20; e = e.cause) {
    lines.unshift(String(e.message).split("\\n")[0]);
  }
  return lines.length > 0 ? lines.join("; ") : String(error && error.message).split("\\n")[0];
}

function noAddonError(cause) {
  const platform = platformName();
  const shipped = PLATFORMS.find(
    (p) => p.os === process.platform && p.cpu === process.arch && (!p.libc || platform.includes(p.libc)),
  );
  const fix = shipped
    ? \`The prebuilt one for this platform is in the package treelog-\${shipped.dir}, an optional dependency \` +
      "of treelog, which is missing or did not load: reinstall treelog without --omit=optional (or " +
      "--no-optional), from a package-lock.json not written on another platform. Or build the addon from source"
    : \`treelog ships prebuilt addons for \${PLATFORMS.map((p) => p.label).join("; ")} only (the packages \` +
      "treelog-<platform>). Build one for this platform from source";
  const error = new Error(
    \`treelog: no native addon loaded for \${platform} (Node \${process.version}). \${fix}: with a Rust \` +
      "toolchain (rustup), run \`npm ci\` and \`npm run build\` in bindings/node of treelog's source (it writes " +
      "treelog.<platform>.node beside native.cjs, which is tried first), then install that folder instead. " +
      \`The loader tried: \${attempts(cause)}.\`,
  );
  error.cause = cause;
  return error;
}

function generatedLoader(module, exports, require) {
${generated}
}

try {
  generatedLoader(module, module.exports, require);
} catch (error) {
  throw noAddonError(error);
}
`;

const file = process.argv[2];
if (file && basename(file) === "native.cjs") {
  const generated = readFileSync(file, "utf8");
  if (!generated.startsWith(MARK)) writeFileSync(file, wrapper(generated));
}
