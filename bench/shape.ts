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
