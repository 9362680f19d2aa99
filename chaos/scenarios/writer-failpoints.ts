/**
 * Writer SIGKILL at each writer failpoint, armed on one writer process with `@N` so it fires mid-run: in the
 * bucket-buffer worker thread while it decodes fetched rows (`bucket-buffer.append`) or is about to encode a flush
 * (`bucket-buffer.flush`) — SIGKILL from a worker thread takes the whole node —, in the middle of a Parquet file's bytes (`io.write.mid`), after encoding before the file (`writer.parquet.encoded`), after the
 * file before the committable (`writer.file.written`), after the committable (`writer.after-committable`).
 * Expected: the partial or complete files are orphans, the buckets move to live writers (or come back to the
 * restarted one) and resume from the committed offset; nothing is lost or doubled.
 *
 * `writer-failpoints` runs all four in one topology (the CI subset); `writer-kill@<point>` runs one.
 */
import { WRITER_FAILPOINTS, writerFailpointFault } from "../faults.ts";
import type { Scenario } from "../types.ts";

export const scenarios: Scenario[] = [
  {
    name: "writer-failpoints",
    description: "a writer SIGKILLs itself at each writer failpoint in turn (one process armed at a time, @N mid-run)",
    ci: true,
    defaultDurationMs: 40_000,
    async run(ctx) {
      await ctx.sleep(4000);
      for (const point of WRITER_FAILPOINTS) {
        await writerFailpointFault(ctx, point);
        await ctx.sleep(1000); // each fault already waits for the victim's restart and its buckets' hand-back
      }
    },
  },
  ...WRITER_FAILPOINTS.map(
    (point): Scenario => ({
      name: `writer-kill@${point}`,
      description: `a writer SIGKILLs itself at ${point}`,
      suite: false,
      defaultDurationMs: 25_000,
      async run(ctx) {
        await ctx.sleep(4000);
        await writerFailpointFault(ctx, point);
      },
    }),
  ),
];
