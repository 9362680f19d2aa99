/**
 * `natslake node drain <node-id> --nats URL [--exit]`: a node hands its buckets and leases off exactly as on SIGTERM,
 * asked over NATS (cluster/node-control.ts) — for a node whose process the operator cannot signal (another host, a
 * container). By default the node then stays up, holding nothing, until it is stopped or restarted (see docs/operations/deploying.md:
 * a process supervisor would restart an exited node, which would take buckets again); `--exit` ends it instead.
 */
import type { Command } from "commander";
import { DEFAULT_PREFIX } from "../nats/subjects.ts";
import { requestDrain } from "../node-control-client.ts";
import { CliError, connectOrExplain, durationArg } from "./common.ts";

interface DrainFlags {
  nats: string;
  prefix: string;
  exit?: boolean;
  json?: boolean;
  silenceTimeout: number;
}

export function registerNodeDrainCommand(node: Command, out: (s: string) => void): void {
  node
    .command("drain <node-id>")
    .description("hand a running node's buckets and leases off, as on SIGTERM, without a signal; the node then stays up holding nothing (--exit: it stops)")
    .requiredOption("--nats <url>", "the cluster's NATS server(s)")
    .option("--prefix <p>", "the cluster's subject prefix", DEFAULT_PREFIX)
    .option("--exit", "the node exits once drained, as after SIGTERM")
    .option("--json", "print the node's final report as JSON")
    .option("--silence-timeout <duration>", "give up when the node says nothing for this long (it reports every second)", durationArg, 10_000)
    .addHelpText(
      "after",
      "\nExamples:\n  natslake node drain node-2 --nats nats://127.0.0.1:4222\n  natslake node drain node-2 --nats nats://127.0.0.1:4222 --exit\n\n" +
        "The node ids are in `natslake status`. Exit 0 when every bucket was handed off, 2 for an id no running node has,\n" +
        "1 when buckets were still owned at the node's drain timeout (their leases expire instead) or the node went silent.",
    )
    .action(async (nodeId: string, o: DrainFlags) => {
      const nc = await connectOrExplain({ ...o, nats: o.nats }, { name: "natslake-node-drain" });
      try {
        let left = -1;
        const r = await requestDrain(nc, nodeId, {
          prefix: o.prefix,
          then: o.exit === true ? "exit" : "stay",
          silenceTimeoutMs: o.silenceTimeout,
          onAccepted: (a) => {
            left = a.buckets;
            const leads = a.leading.length > 0 ? `, leading ${a.leading.join(", ")}` : "";
            process.stderr.write(`draining ${a.node}: ${a.buckets} bucket(s)${leads}${a.alreadyDraining ? " (a drain was already under way)" : ""}\n`);
          },
          onProgress: (b) => {
            if (b !== left) process.stderr.write(`draining ${nodeId}: ${b} bucket(s) left\n`);
            left = b;
          },
        });
        if (o.json) out(JSON.stringify(r));
        else {
          const after = r.then === "exit" ? "it is stopping" : "it stays up holding no buckets and no leases (stop it when convenient; restart it to rejoin)";
          out(`${r.node} drained: ${r.handedOff} bucket(s) handed off; ${after}`);
          if (r.uncommitted > 0) out(`  note: the last committables of ${r.uncommitted} released bucket(s) were not committed within the drain timeout; they stay in the commit stream for the table's leader`);
        }
        if (r.stillOwned > 0)
          throw new CliError(`${r.node}: the drain timed out with ${r.stillOwned} bucket(s) still owned: they move once their owner leases expire (raise the node's drainTimeout, or see its log)`);
      } finally {
        await nc.close().catch(() => undefined);
      }
    });
}
