/**
 * The files of `schemas/` as the package publishes them: one JSON Schema per wire schema and `subjects.json`, the
 * subject → schema index. Written by `npm run schemas` (scripts/write-schemas.mjs); a unit test keeps the committed
 * files equal to these.
 */
import { SUBJECT_CONTRACTS, CONSUME_INBOX_CONTRACT } from "./contracts.ts";
import { toJsonSchema, WIRE_SCHEMAS } from "./schemas.ts";

const text = (v: unknown): string => JSON.stringify(v, null, 2) + "\n";

/** File name → content. */
export function publishedSchemaFiles(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of WIRE_SCHEMAS) out[`${s.name}.schema.json`] = text(toJsonSchema(s));
  out["subjects.json"] = text({
    description:
      "natslake's subjects and the schema of their messages. <p> is the subject prefix (lake by default), <bucket> a bucket number, other <…> one subject token. msgpack messages are described in msgpack's JSON view: bin as base64 text, integers of any width as integers.",
    encodings: Object.fromEntries(WIRE_SCHEMAS.map((s) => [s.name, s.encoding])),
    subjects: SUBJECT_CONTRACTS,
    consumeInbox: CONSUME_INBOX_CONTRACT,
  });
  return out;
}
