/**
 * Settings read from the environment by the library itself (most settings come through `cluster/config.ts`; these
 * size thread pools that exist before any configuration is read).
 */
import { ErrorKind, LakeError } from "./errors.ts";

/** A worker-thread count from `name` (0 = none: work on the calling thread); undefined when unset or blank. */
export function workerCountFromEnv(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new LakeError(ErrorKind.DataInvalid, `${name} must be a whole number ≥ 0, the worker threads (0: none) (got '${raw}')`);
  return n;
}
