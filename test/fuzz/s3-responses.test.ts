/**
 * Fuzz: S3 responses as the S3 FileIO reads them through the AWS SDK (its XML and header parsing, then
 * src/io/s3.ts's listing, sizes, times and reads). A real store does not answer garbage, so the store here is an HTTP
 * server on loopback that answers each request with the case's response: a valid ListObjectsV2 page, object or HEAD
 * answer mutated (status, headers, XML cut, flipped, nested, with entities), or random bytes. Every case: the value or
 * a LakeError (Io, NotFound), within the time budget; a listing whose pages never end (a truncated page with the token
 * it was asked with) must stop with an error instead of asking for ever.
 */
import { test, after, before } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import fc from "fast-check";
import { S3FileIO } from "../../src/io/s3.ts";
import { LakeError } from "../../src/errors.ts";
import { fuzzParams, fuzzTimeout, mutated, preview, randomBytes } from "../helpers/fuzz.ts";

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
}

const enc = new TextEncoder();
const listXml = (keys: string[], truncated: boolean, token?: string): string =>
  `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix>db/</Prefix><KeyCount>${keys.length}</KeyCount><MaxKeys>1000</MaxKeys><Delimiter>/</Delimiter><IsTruncated>${truncated}</IsTruncated>${token ? `<NextContinuationToken>${token}</NextContinuationToken>` : ""}${keys
    .map((k) => `<Contents><Key>db/${k}</Key><LastModified>2024-05-01T10:00:00.000Z</LastModified><ETag>"abc"</ETag><Size>${k.length * 100}</Size><StorageClass>STANDARD</StorageClass></Contents>`)
    .join("")}<CommonPrefixes><Prefix>db/sub/</Prefix></CommonPrefixes></ListBucketResult>`;
const errorXml = (code: string): string => `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>m</Message><RequestId>r</RequestId></Error>`;

const VALID: Answer[] = [
  { status: 200, headers: { "content-type": "application/xml" }, body: enc.encode(listXml(["a", "snapshot-1"], false)) },
  { status: 200, headers: { "content-type": "application/xml" }, body: enc.encode(listXml(["b"], true, "t1")) },
  { status: 200, headers: { "content-type": "application/octet-stream", "last-modified": "Wed, 01 May 2024 10:00:00 GMT", etag: '"abc"' }, body: enc.encode("hello object") },
  { status: 404, headers: { "content-type": "application/xml" }, body: enc.encode(errorXml("NoSuchKey")) },
  { status: 403, headers: { "content-type": "application/xml" }, body: enc.encode(errorXml("AccessDenied")) },
  { status: 503, headers: { "content-type": "application/xml" }, body: enc.encode(errorXml("SlowDown")) },
];

/** Header values a server should not send: not numbers, negative, beyond 2^53, not dates. */
const badHeader = fc.constantFrom("", "-1", "abc", "1e400", "99999999999999999999", "Thu, 99 Foo 99999 99:99:99 GMT", "\u00ff\u00fe");
const deepXml = fc.integer({ min: 1000, max: 50_000 }).map((d) => enc.encode(`<?xml version="1.0"?><ListBucketResult>${"<a>".repeat(d)}${"</a>".repeat(d)}</ListBucketResult>`));
const entityXml = fc.constant(
  enc.encode(`<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><ListBucketResult><Name>&c;</Name></ListBucketResult>`),
);
const answers: fc.Arbitrary<Answer> = fc.oneof(
  fc.constantFrom(...VALID),
  fc.tuple(fc.constantFrom(...VALID), mutated(fc.constantFrom(...VALID.map((v) => v.body)))).map(([a, body]) => ({ ...a, body })),
  fc.tuple(fc.constantFrom(...VALID), fc.constantFrom("content-length", "last-modified", "etag", "content-type"), badHeader).map(([a, h, v]) => ({ ...a, headers: { ...a.headers, [h]: v } })),
  fc.tuple(fc.constantFrom(200, 206, 301, 400, 404, 409, 412, 416, 500), fc.oneof(randomBytes(128), deepXml, entityXml)).map(([status, body]) => ({ status, headers: { "content-type": "application/xml" }, body })),
);

let server: Server;
let io: S3FileIO;
/** The answer to every request of the running case, and how many requests it took. */
let current: Answer = VALID[0]!;
let requests = 0;
/** A listing that asks more pages than this is looping: the server then answers a final page (and the case fails). */
const PAGE_BOUND = 50;

function answer(req: IncomingMessage, res: ServerResponse): void {
  requests++;
  req.resume();
  const a = requests > PAGE_BOUND ? VALID[0]! : current;
  // Content-Length is the case's when it sets one (a lie is part of the case), else the body's.
  const headers = { "content-length": String(a.body.length), ...a.headers };
  try {
    res.writeHead(a.status, headers);
  } catch {
    res.writeHead(a.status, { "content-length": String(a.body.length) }); // a header Node refuses to send
  }
  res.end(req.method === "HEAD" ? undefined : a.body);
  res.on("error", () => undefined);
}

before(async () => {
  server = createServer(answer);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  io = new S3FileIO({
    bucket: "b",
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    forcePathStyle: true,
    maxAttempts: 1,
    requestTimeoutMs: 2000,
    credentials: { accessKeyId: "fuzz", secretAccessKey: "fuzz" },
  });
});

after(async () => {
  io.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

/** One FileIO call against the case's answers: its value or a LakeError, in time, and no endless listing. */
async function call<T>(what: string, op: () => Promise<T>, a: Answer): Promise<{ ok: true; value: T } | { ok: false; error: Error }> {
  requests = 0;
  current = a;
  const started = performance.now();
  let out: { ok: true; value: T } | { ok: false; error: Error };
  try {
    out = { ok: true, value: await op() };
  } catch (e) {
    out = { ok: false, error: e as Error };
  }
  const ms = performance.now() - started;
  const input = `${what} on HTTP ${a.status} ${JSON.stringify(a.headers)} ${preview(a.body)}`;
  assert.ok(requests <= PAGE_BOUND, `${what} asked ${requests} pages: a listing that never ends (${input})`);
  assert.ok(ms < 5000, `${what} took ${ms.toFixed(0)} ms (${input})`);
  if (!out.ok) assert.ok(out.error instanceof LakeError, `untyped ${out.error?.constructor?.name} from ${input}: ${out.error?.message}`);
  return out;
}

test("fuzz s3 responses - listings, reads, sizes and times: a value or a LakeError, never an endless listing", { timeout: fuzzTimeout(60) }, async () => {
  await fc.assert(
    fc.asyncProperty(answers, async (a) => {
      const list = await call("listStatus", () => io.listStatus("/db"), a);
      if (list.ok) for (const s of list.value) assert.ok(typeof s.name === "string" && s.name.length > 0 && Number.isFinite(s.size) && s.size >= 0 && Number.isFinite(s.mtime), JSON.stringify(s));
      const read = await call("readFile", () => io.readFile("/db/x"), a);
      if (read.ok) assert.ok(read.value instanceof Uint8Array);
      const size = await call("size", () => io.size("/db/x"), a);
      if (size.ok) assert.ok(Number.isSafeInteger(size.value) && size.value >= 0, `size ${size.value}`);
      const mtime = await call("mtime", () => io.mtime("/db/x"), a);
      if (mtime.ok) assert.ok(Number.isFinite(mtime.value), `mtime ${mtime.value}`);
      await call("exists", () => io.exists("/db/x"), a);
    }),
    fuzzParams(),
  );
});
