// Shared pieces of the differential harness: the two pi versions, a seeded PRNG, the fake
// clock and id source that make generated transcripts reproducible, and JSON comparison. pi
// and Node 24 are those bindings/node pins (test/pi-project.mjs there); this directory has no
// npm project of its own.
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { relative } from "node:path";

import { NODE24, importPinned } from "../../bindings/node/test/pi-project.mjs";

/** The pi versions the harness knows, by the short name used on command lines. */
export const PI_VERSIONS = {
  "1.6": { name: "@earendil-works/pi-coding-agent", version: "1.6.0" },
  "0.73": { name: "@mariozechner/pi-coding-agent", version: "0.73.1" },
};

const loaded = new Map();

/**
 * Imports one pi version's public module (its package index), as bindings/node installs it.
 * pi 1.6.0 needs Node >= 22.19; the error says which binary to use instead of failing inside
 * pi.
 */
export async function loadPi(short) {
  const spec = PI_VERSIONS[short];
  if (!spec) throw new Error(`unknown pi version ${short} (use ${Object.keys(PI_VERSIONS).join(" or ")})`);
  const [major, minor] = process.versions.node.split(".").map(Number);
  if (short === "1.6" && (major < 22 || (major === 22 && minor < 19))) {
    throw new Error(
      `pi 1.6.0 needs Node >= 22.19, this is ${process.version}: run with ${relative(process.cwd(), NODE24)}`,
    );
  }
  if (!loaded.has(short)) {
    const module = await importPinned(spec.name);
    loaded.set(short, { ...spec, short, module });
  }
  return loaded.get(short);
}

/** sfc32 seeded through splitmix32: small, fast, and the same stream on every platform. */
export function prng(seed) {
  let state = seed >>> 0;
  const splitmix = () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = splitmix();
  let b = splitmix();
  let c = splitmix();
  let d = splitmix();
  const next = () => {
    const t = (((a + b) >>> 0) + d) >>> 0;
    d = (d + 1) >>> 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) >>> 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) >>> 0;
    return t;
  };
  const random = () => next() / 4294967296;
  return {
    u32: next,
    random,
    /** An integer in [low, high]. */
    int: (low, high) => low + Math.floor(random() * (high - low + 1)),
    chance: (p) => random() < p,
    pick: (items) => items[Math.floor(random() * items.length)],
    /** Picks a key of `weights` with probability proportional to its (non-negative) weight. */
    weighted(weights) {
      const entries = Object.entries(weights).filter(([, w]) => w > 0);
      const total = entries.reduce((sum, [, w]) => sum + w, 0);
      let x = random() * total;
      for (const [key, w] of entries) {
        x -= w;
        if (x < 0) return key;
      }
      return entries[entries.length - 1][0];
    },
    hex: (length) => {
      let text = "";
      while (text.length < length) text += next().toString(16).padStart(8, "0");
      return text.slice(0, length);
    },
  };
}

/** A 32-bit FNV-1a hash, to derive seeds from names. */
export function hashSeed(text) {
  let h = 0x811c9dc5;
  for (const ch of text) h = Math.imul(h ^ ch.codePointAt(0), 0x01000193) >>> 0;
  return h;
}

const RealDate = Date;
let fakeNowMs = null;

/**
 * Replaces the clock pi reads (`new Date()`, `Date.now()`) with one the generator moves by
 * hand, so that timestamps, and with them getTree's sibling order, follow the seed. Dates
 * built from an argument are untouched. Idempotent.
 */
export function installFakeClock(startMs) {
  fakeNowMs = startMs;
  if (globalThis.Date !== RealDate) return;
  class FakeDate extends RealDate {
    constructor(...args) {
      if (args.length === 0 && fakeNowMs !== null) super(fakeNowMs);
      else super(...args);
    }
    static now() {
      return fakeNowMs ?? RealDate.now();
    }
  }
  globalThis.Date = FakeDate;
}

export const clock = {
  now: () => fakeNowMs,
  /** Back to the real clock (the fake one stays installed, reading real time). */
  stop() {
    fakeNowMs = null;
  },
  /** Moves the fake clock by `ms` (negative steps model a clock set back). */
  advance(ms) {
    fakeNowMs += ms;
  },
};

/**
 * Makes `crypto.randomUUID`, which pi's generateId slices to 8 hex characters, draw from
 * `rng`. pi imports the function by name from the builtin module; syncBuiltinESMExports
 * updates that binding.
 */
const realRandomUuid = crypto.randomUUID;

export function installSeededUuids(rng) {
  crypto.randomUUID = () => {
    const h = rng.hex(32);
    const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
  };
  syncBuiltinESMExports();
}

export function restoreRandomUuids() {
  crypto.randomUUID = realRandomUuid;
  syncBuiltinESMExports();
}

/** A version 7 uuid (session ids) from the fake clock and `rng`. */
export function seededUuidV7(rng, ms) {
  const time = ms.toString(16).padStart(12, "0");
  const h = rng.hex(20);
  const variant = ((parseInt(h[3], 16) & 0x3) | 0x8).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${h.slice(0, 3)}-${variant}${h.slice(4, 7)}-${h.slice(8, 20)}`;
}

/** JSON text with object keys sorted at every depth: equal for deep-equal values. */
export function canonical(value) {
  return JSON.stringify(value, (_, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]))
      : v,
  );
}

export const deepEqual = (a, b) => canonical(a) === canonical(b);

/**
 * Where two JSON values first differ, as a short human-readable line: the JSON path and the
 * two values (shortened), or an array length mismatch.
 */
export function firstDifference(expected, actual, path = "$") {
  if (deepEqual(expected, actual)) return null;
  const kind = (v) => (Array.isArray(v) ? "array" : v === null ? "null" : typeof v);
  if (kind(expected) !== kind(actual) || (kind(expected) !== "array" && kind(expected) !== "object")) {
    return `${path}: pi ${shorten(expected)} / treelog ${shorten(actual)}`;
  }
  if (Array.isArray(expected)) {
    for (let i = 0; i < Math.min(expected.length, actual.length); i++) {
      const inner = firstDifference(expected[i], actual[i], `${path}[${i}]`);
      if (inner) return inner;
    }
    return `${path}: pi has ${expected.length} items, treelog ${actual.length} (first extra: ${shorten(
      expected.length > actual.length ? expected[actual.length] : actual[expected.length],
    )} on the ${expected.length > actual.length ? "pi" : "treelog"} side)`;
  }
  for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
    if (!(key in actual)) return `${path}.${key}: pi ${shorten(expected[key])} / treelog lacks it`;
    if (!(key in expected)) return `${path}.${key}: pi lacks it / treelog ${shorten(actual[key])}`;
    const inner = firstDifference(expected[key], actual[key], `${path}.${key}`);
    if (inner) return inner;
  }
  return `${path}: differs`;
}

export function shorten(value, max = 160) {
  const text = value === undefined ? "undefined" : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Parses `--name value` and `--flag` arguments into an object; positional ones go to `_`. */
export function parseArgs(argv, flags = []) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith("--")) {
      out._.push(arg);
      continue;
    }
    const [key, inline] = arg.slice(2).split("=", 2);
    if (inline !== undefined) out[key] = inline;
    else if (flags.includes(key)) out[key] = true;
    else {
      if (i + 1 >= argv.length) throw new Error(`--${key} needs a value`);
      out[key] = argv[++i];
    }
  }
  return out;
}

/** Runs a script's main, printing an error as one line and exiting 2 (could not run). */
export async function runMain(main) {
  try {
    await main();
  } catch (error) {
    console.error(`${process.argv[1]}: ${error.message}`);
    process.exit(2);
  }
}
