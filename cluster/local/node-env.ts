/**
 * The environment natslake starts its node processes with (`natslake up`, the cluster primary-key benchmark): the given one, plus
 * `MALLOC_ARENA_MAX=2` unless it is set. The native Parquet codec allocates through glibc's malloc in every thread
 * that encodes or decodes, and glibc keeps a growing arena per thread holding what was freed: measured on the cluster
 * primary-key benchmark, node RSS peaked at 404–417 MB as is and at 373–378 MB with two arenas, latency and
 * throughput unchanged. A deployment sets it the same way (docs/operations/sizing.md); it must be in the
 * environment before the process starts.
 */
export function nodeProcessEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { MALLOC_ARENA_MAX: "2", ...base };
}
