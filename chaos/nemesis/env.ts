/**
 * Combining the env fragments nemeses return (slowFsyncEnv, clockSkewEnv, …) into one child environment.
 *
 *   spawn("node", args, { env: childEnv(process.env, await slowFsyncEnv(100), clockSkewEnv(30_000)) });
 */

const PRELOAD = "LD_PRELOAD";

/** Merges fragments left to right: LD_PRELOAD lists are joined (duplicates dropped), any other key: the last one wins. */
export function combineEnv(...parts: ReadonlyArray<Readonly<Record<string, string | undefined>>>): Record<string, string> {
  const out: Record<string, string> = {};
  const preload: string[] = [];
  for (const part of parts) {
    for (const [k, v] of Object.entries(part)) {
      if (v === undefined) continue;
      if (k === PRELOAD) {
        for (const lib of v.split(/[: ]+/)) if (lib && !preload.includes(lib)) preload.push(lib);
      } else out[k] = v;
    }
  }
  if (preload.length > 0) out[PRELOAD] = preload.join(":");
  return out;
}

/**
 * A full child environment: `base` (default process.env) plus the fragments. An inherited `FAKETIME` is dropped
 * when a fragment uses a libfaketime control file (FAKETIME would silently win over it).
 */
export function childEnv(base: NodeJS.ProcessEnv = process.env, ...parts: ReadonlyArray<Readonly<Record<string, string | undefined>>>): Record<string, string> {
  const inherited: Record<string, string | undefined> = { ...base };
  if (parts.some((p) => p["FAKETIME_TIMESTAMP_FILE"] !== undefined && p["FAKETIME"] === undefined)) delete inherited["FAKETIME"];
  return combineEnv(inherited, ...parts);
}
