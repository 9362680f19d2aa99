/**
 * A lookup request's JSON checked the quick way: the common request — `type`, `v`, `table`, `keys`, and perhaps
 * `columns` and `waitMs` — is taken when it plainly holds what `lookupRequestSchema` asks (measured: the schema's
 * check was 8% of a reader's CPU per single-key lookup under the lookup benchmark); anything else (a snapshot asked
 * for, read-your-writes offsets, any doubt) is left to the schema, which also says what is wrong.
 */
import { MAX_LOOKUP_KEYS, MAX_LOOKUP_WAIT_MS, type LookupRequest } from "../actors/wire/lookup.ts";

const COMMON_FIELDS = new Set(["type", "v", "table", "keys", "columns", "waitMs"]);

const isPlainRecord = (o: unknown): o is Record<string, unknown> => typeof o === "object" && o !== null && !Array.isArray(o) && Object.getPrototypeOf(o) === Object.prototype;

/**
 * `o` as a request when it is a common one that `lookupRequestSchema` accepts as it is; null when the schema must
 * decide. Never takes what the schema refuses (test/unit/cluster/lookup-request.test.ts holds them side by side).
 */
export function commonLookupRequest(o: unknown): LookupRequest | null {
  if (!isPlainRecord(o)) return null;
  for (const name in o) if (!COMMON_FIELDS.has(name)) return null;
  if (o["type"] !== "lookup" || o["v"] !== 1) return null;
  const table = o["table"];
  if (typeof table !== "string" || table.length === 0) return null;
  const keys = o["keys"];
  if (!Array.isArray(keys) || keys.length === 0 || keys.length > MAX_LOOKUP_KEYS) return null;
  // `__proto__` as a field: the schema's copy of the key would not keep it as one; left to the schema.
  for (const k of keys) if (!isPlainRecord(k) || Object.hasOwn(k, "__proto__")) return null;
  const columns = o["columns"];
  if (columns !== undefined) {
    if (!Array.isArray(columns) || columns.length === 0) return null;
    for (const c of columns) if (typeof c !== "string" || c.length === 0) return null;
  }
  const waitMs = o["waitMs"];
  if (waitMs !== undefined && !(typeof waitMs === "number" && Number.isSafeInteger(waitMs) && waitMs >= 0 && waitMs <= MAX_LOOKUP_WAIT_MS)) return null;
  return o as unknown as LookupRequest;
}
