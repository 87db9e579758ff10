// Types of `treelog/pi` for `import`: the same as for `require` (pi.d.cts, which says why).
export * from "./pi.cjs";
