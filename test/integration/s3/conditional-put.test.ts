/**
 * The store's conditional put, proven before anything relies on it: concurrent PutObject with `If-None-Match: *` of
 * one key, several rounds. Exactly one may succeed (200) and every other must get 412, and the object must hold the
 * winner's bytes — what `snapshot-N`'s exactly-once creation stands on. Raw SDK requests, no natslake code between.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { GetObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";

let store: S3TestStore;
let clients: S3Client[];

before(async () => {
  store = await startS3Store();
  const { endpoint, region, credentials } = store.server;
  // One client (one connection pool) per racer, as separate committers would have.
  clients = Array.from({ length: 8 }, () => new S3Client({ endpoint, region, credentials, forcePathStyle: true, maxAttempts: 1, requestChecksumCalculation: "WHEN_REQUIRED" }));
});
after(async () => {
  for (const c of clients ?? []) c.destroy();
  await store?.stop();
});

const ROUNDS = 8;

test("If-None-Match: * — of 8 concurrent creators of one key exactly one gets 200, the others 412, in every round", async () => {
  for (let round = 0; round < ROUNDS; round++) {
    const key = `race/round-${round}/snapshot-1`;
    const results = await Promise.all(
      clients.map(async (c, i) => {
        try {
          await c.send(new PutObjectCommand({ Bucket: store.bucket, Key: key, Body: `writer ${i} round ${round}`, IfNoneMatch: "*" }));
          return { i, status: 200 };
        } catch (e) {
          return { i, status: (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? -1, error: String(e) };
        }
      }),
    );
    const winners = results.filter((r) => r.status === 200);
    const losers = results.filter((r) => r.status === 412);
    assert.equal(winners.length, 1, `round ${round}: ${JSON.stringify(results)}`);
    assert.equal(losers.length, clients.length - 1, `round ${round}: ${JSON.stringify(results)}`);
    const got = await clients[0]!.send(new GetObjectCommand({ Bucket: store.bucket, Key: key }));
    assert.equal(await got.Body!.transformToString(), `writer ${winners[0]!.i} round ${round}`, `round ${round}: the object holds the winner's bytes`);
  }
});

test("If-None-Match: * on an existing key is refused (412) and leaves the object as it was", async () => {
  const key = "race/existing";
  await clients[0]!.send(new PutObjectCommand({ Bucket: store.bucket, Key: key, Body: "first" }));
  await assert.rejects(clients[1]!.send(new PutObjectCommand({ Bucket: store.bucket, Key: key, Body: "second", IfNoneMatch: "*" })), (e: unknown) => {
    assert.equal((e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode, 412);
    return true;
  });
  const got = await clients[0]!.send(new GetObjectCommand({ Bucket: store.bucket, Key: key }));
  assert.equal(await got.Body!.transformToString(), "first");
});
