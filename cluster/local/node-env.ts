/**
 * The environment natslake starts its node processes with (`natslake up`, the cluster primary-key benchmark): the
 * given one, plus two memory settings a deployment makes the same way (docs/operations/sizing.md), each only when the
 * environment does not choose it already. Both must be in the environment before the process starts.
 *
 * - `MALLOC_ARENA_MAX=2`: the native Parquet codec allocates through glibc's malloc in every thread that encodes or
 *   decodes, and glibc keeps a growing arena per thread holding what was freed. Measured on the cluster primary-key
 *   benchmark: node RSS peaked at 404–417 MB as is and at 373–378 MB with two arenas, latency and throughput unchanged.
 * - `--max-semi-space-size=8` in NODE_OPTIONS: V8's young generation, per isolate — the node's main thread and each
 *   of its worker threads (Parquet pool, ingest decoders, compaction) — may grow to three semi-spaces of 16 MiB on
 *   64-bit Node 20 and keeps what it grew to. Half that bound took node RSS in the same benchmark from 368–423 MB to
 *   326–348 MB, node CPU and latency unchanged (4 MiB: 302–339 MB, but more scavenges for little more).
 */
export const NODE_SEMI_SPACE_FLAG = "--max-semi-space-size=8";

export function nodeProcessEnv(base: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const options = base.NODE_OPTIONS ?? "";
  // An operator's own choice of the bound stays theirs.
  const nodeOptions = /--max-semi-space-size\b/.test(options) ? options : [options, NODE_SEMI_SPACE_FLAG].filter((o) => o.trim() !== "").join(" ");
  return { MALLOC_ARENA_MAX: "2", ...base, NODE_OPTIONS: nodeOptions };
}
