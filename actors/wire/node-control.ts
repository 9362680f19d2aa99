/**
 * Validation of node control requests (`<p>.ctl.node.<nodeId>`): anyone on the NATS account may publish there, so a
 * node checks the shape before it acts — an unknown request or a misspelled field is answered with one message
 * naming what is wrong, never taken for a drain with a default in its place.
 */
import { z } from "zod";
import { dataInvalid } from "../../src/errors.ts";
import type { NodeDrainRequest } from "./messages.ts";

/** The node's check of a request (published as schemas/node-control-request.schema.json). */
export const nodeControlRequestSchema = z
  .strictObject({
    type: z.literal("drain"),
    v: z.literal(1),
    then: z.enum(["stay", "exit"]).describe("`stay`: the process stays up holding nothing (until restarted); `exit`: it then stops as after a SIGTERM"),
  })
  .meta({
    title: "NodeControlRequest",
    description:
      "A control request for one node (JSON) on `<p>.ctl.node.<nodeId>` (`natslake node drain`), answered by that node only with NodeControlReply messages: drain it as SIGTERM would — its buckets flushed and handed to other writers, their last committables committed, its leases released.",
  });

/** The request in `data`, or a DataInvalid error saying what is wrong with it. */
export function parseNodeControlRequest(data: Uint8Array): NodeDrainRequest {
  let o: unknown;
  try {
    o = JSON.parse(new TextDecoder().decode(data));
  } catch {
    throw dataInvalid("a node control request is a JSON object; this is not JSON");
  }
  const type = (o as { type?: unknown } | null)?.type;
  if (type !== "drain") throw dataInvalid(`node control request: unknown type ${JSON.stringify(type)} (drain)`);
  const r = nodeControlRequestSchema.safeParse(o);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.length > 0 ? i.path.join(".") : "request"}: ${i.code === "unrecognized_keys" ? `unknown keys ${i.keys.map((k) => `'${k}'`).join(", ")}` : i.message}`);
    throw dataInvalid(`node control request is not valid: ${issues.join("; ")}`);
  }
  return r.data;
}
