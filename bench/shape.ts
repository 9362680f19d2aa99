/**
 * The benchmarks' row shape (the same as bench/py/pypaimon_bench.py's): 6 columns, row `i` derived from `i` alone,
 * so every benchmark and process makes the same rows.
 */
export const BENCH_COLUMNS = "id BIGINT, ts TIMESTAMP(3), user STRING, event STRING, amount DOUBLE, qty INT";

export const BENCH_EVENTS = ["click", "view", "buy", "cart", "login", "logout", "search", "share", "like", "comment"];

export const benchUser = (i: number): string => `user-${String((i * 7919) % 100000).padStart(6, "0")}`;

/** Row `i` as a service hands it over (plain JSON-like values). */
export const benchInputRow = (i: number): Record<string, unknown> => ({
  id: i,
  ts: 1700000000000 + i,
  user: benchUser(i),
  event: BENCH_EVENTS[i % 10],
  amount: (i % 1000) * 0.25,
  qty: i % 100,
});

/**
 * The key of row `i` of the upsert benchmarks (primary key `id`; test/compat/java/PaimonPk.java's bench-write makes
 * the same rows): every tenth row (i % 10 == 9) updates the key of an earlier inserting row, the others insert key i —
 * so n rows hold 0.9·n keys and 0.1·n updates spread over the whole history.
 */
export function benchUpsertKey(i: number): number {
  if (i % 10 !== 9) return i;
  const h = (Math.imul(i, 0x9e3779b1) >>> 0) % i; // a 32-bit multiplicative hash of i, below i
  return h % 10 === 9 ? h - 1 : h;
}

/** Row `i` of the upsert benchmarks: `benchInputRow(i)` under the key `benchUpsertKey(i)`. */
export const benchUpsertRow = (i: number): Record<string, unknown> => ({ ...benchInputRow(i), id: benchUpsertKey(i) });

/**
 * The stride of `benchKeyOf`: a prime (Knuth's multiplicative-hash constant, ≈ 0.618 · 2^32), larger than any key
 * count allowed, hence coprime with it: `i · stride mod keys` visits every key once in any `keys` consecutive rows.
 */
export const BENCH_KEY_STRIDE = 2_654_435_761;

/** The largest key count whose products in `benchKeyOf` stay exact (keys² ≤ 2^53). */
export const BENCH_MAX_KEYS = Math.floor(Math.sqrt(Number.MAX_SAFE_INTEGER));

/**
 * The key of row `i` of the cluster's primary-key benchmark over `keys` keys (bench/cluster-pk.bench.ts):
 * `(i mod keys) · (BENCH_KEY_STRIDE mod keys) mod keys` — the first `keys` rows insert every key once, consecutive
 * rows far apart in the range (so each producer batch, bucket and commit gets keys from all of it), and each later
 * row updates one.
 */
export function benchKeyOf(i: number, keys: number): number {
  return ((i % keys) * (BENCH_KEY_STRIDE % keys)) % keys;
}

/** Why `keys` cannot be the key count of `benchKeyOf` (null: it can). */
export function benchKeysProblem(keys: number): string | null {
  if (!Number.isSafeInteger(keys) || keys < 1) return `keys must be a positive integer, got ${keys}`;
  if (keys > BENCH_MAX_KEYS) return `keys must be at most ${BENCH_MAX_KEYS}, got ${keys}`;
  return null;
}

/** Row `i` of the cluster's primary-key benchmark: `benchInputRow(i)` under the key `benchKeyOf(i, keys)`. */
export const benchKeyedRow = (i: number, keys: number): Record<string, unknown> => ({ ...benchInputRow(i), id: benchKeyOf(i, keys) });

/**
 * Row `i` of the merge-engine benchmarks (bench/pk-engines.bench.ts; PaimonPk.java's bench-write with
 * `sparseUpdates`): `benchUpsertRow(i)`, but an updating row (i % 10 == 9) leaves `event` and `qty` null — what a
 * partial update does not set, and what an aggregate ignores.
 */
export const benchSparseUpsertRow = (i: number): Record<string, unknown> => (i % 10 === 9 ? { ...benchUpsertRow(i), event: null, qty: null } : benchUpsertRow(i));
