/**
 * Validation of node control requests (`<p>.ctl.node.<nodeId>`): anyone on the NATS account may publish there, so a
 * node checks the shape before it acts — an unknown request or a misspelled field is answered with one message
 * naming what is wrong, never taken for a drain with a default in its place.
 */
import { z } from "zod";
import { dataInvalid } from "../../src/errors.ts";
import type { NodeDrainRequest } from "./messages.ts";

const drain = z.strictObject({ type: z.literal("drain"), v: z.literal(1), then: z.enum(["stay", "exit"]) });

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
  const r = drain.safeParse(o);
  if (!r.success) {
    const issues = r.error.issues.map((i) => `${i.path.length > 0 ? i.path.join(".") : "request"}: ${i.code === "unrecognized_keys" ? `unknown keys ${i.keys.map((k) => `'${k}'`).join(", ")}` : i.message}`);
    throw dataInvalid(`node control request is not valid: ${issues.join("; ")}`);
  }
  return r.data;
}
