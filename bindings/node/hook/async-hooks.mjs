// The hooks of module.register (hook/pi.mjs uses them when Node has no module.registerHooks):
// off the main thread, they hand treelog's module (`to`) to every import that resolves to
// pi's dist/core/session-manager.js (`from`).
let from;
let to;

export function initialize(data) {
  ({ from, to } = data);
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  return resolved.url === from ? { url: to, format: "module", shortCircuit: true } : resolved;
}
