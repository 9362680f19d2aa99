/** The default of a node's `decodeDeadline` (cluster/config.ts) and of a bucket buffer's deadline (bucket-buffers.ts). */

/**
 * How long a worker may run one append or flush before it is stopped, unless the node says otherwise (its
 * `decodeDeadline`). A stall is only ever a bug or a hostile message, and a false stop costs the bucket a re-read and
 * an attempt (several in a row isolate it, and can dead-letter an innocent message), so the bound is far above real
 * work: the largest flush — a bucket's whole buffer (`write-buffer-size`, 256 MiB; 500 000 rows) — encodes in seconds,
 * tens of seconds on a loaded machine whose cores the node shares; two minutes leaves a wide margin over that and is
 * still far below what an SRE notices as a stuck bucket (its stall report comes at 15 s).
 */
export const DEFAULT_STALL_DEADLINE_MS = 120_000;
