/**
 * The FileIO contract (src/io/file-io.ts), one set of checks run against both implementations: the local filesystem
 * and S3 (SeaweedFS, real). Then what only S3 has: multipart uploads, the unknown outcome of a conditional put
 * (a proxy that loses the answer or the request), the start-up probe, request counts, warehouse URIs.
 */
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import type { FileIO } from "../../../src/io/file-io.ts";
import { LocalFileIO } from "../../../src/io/local.ts";
import { S3FileIO } from "../../../src/io/s3.ts";
import { countsSince } from "../../../src/io/s3-requests.ts";
import { checkWarehouse, openWarehouse, parseWarehouse } from "../../../src/io/warehouse.ts";
import { isLakeError } from "../../../src/errors.ts";
import { startS3Store, type S3TestStore } from "../../helpers/s3.ts";
import { tempDir } from "../../helpers/tables.ts";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.ts";

let store: S3TestStore;
let proxy: TcpProxy;
const local = tempDir();

before(async () => {
  store = await startS3Store();
  proxy = await startTcpProxy(store.server.port);
});
after(async () => {
  await proxy?.close();
  await store?.stop();
  local.cleanup();
});

interface Subject {
  io: FileIO;
  root: string;
}

const subjects: Record<string, () => Subject> = {
  local: () => ({ io: new LocalFileIO(), root: join(local.path, randomBytes(4).toString("hex")) }),
  s3: () => {
    const wh = store.open();
    return { io: wh.io, root: wh.root };
  },
};

const text = async (io: FileIO, p: string): Promise<string> => io.readText(p);

for (const [name, make] of Object.entries(subjects)) {
  describe(`FileIO contract - ${name}`, () => {
    test("write, read, replace; a missing file is NotFound", async () => {
      const { io, root } = make();
      const p = `${root}/a/b/file.bin`;
      const bytes = randomBytes(1000);
      await io.writeFile(p, bytes);
      assert.deepEqual(Buffer.from(await io.readFile(p)), bytes);
      await io.writeFile(p, "replaced");
      assert.equal(await text(io, p), "replaced");
      assert.equal(await io.size(p), 8);
      assert.ok(Math.abs((await io.mtime(p)) - Date.now()) < 120_000, "mtime is the write's time");
      await assert.rejects(io.readFile(`${root}/a/nope`), (e: unknown) => isLakeError(e, "NotFound"));
      // Metadata reads (read on the calling thread locally) read the same and fail the same.
      assert.equal(Buffer.from(await io.readFile(p, { metadata: true })).toString(), "replaced");
      assert.equal(await io.readText(p, { metadata: true }), "replaced");
      await assert.rejects(io.readFile(`${root}/a/nope`, { metadata: true }), (e: unknown) => isLakeError(e, "NotFound"));
      await assert.rejects(io.readText(`${root}/a`, { metadata: true }), (e: unknown) => isLakeError(e), "a directory is no file to read");
    });

    test("readRange: the bytes asked for, fewer at the end, none past it; a missing file is NotFound", async () => {
      const { io, root } = make();
      const p = `${root}/ranged/file.bin`;
      const bytes = randomBytes(5000);
      await io.writeFile(p, bytes);
      assert.deepEqual(Buffer.from(await io.readRange(p, 0, 10)), bytes.subarray(0, 10));
      assert.deepEqual(Buffer.from(await io.readRange(p, 1234, 2000)), bytes.subarray(1234, 3234));
      assert.deepEqual(Buffer.from(await io.readRange(p, 4990, 100)), bytes.subarray(4990), "stops at the end");
      assert.equal((await io.readRange(p, 6000, 10)).length, 0, "nothing past the end");
      await assert.rejects(io.readRange(`${root}/ranged/nope`, 0, 10), (e: unknown) => isLakeError(e, "NotFound"));
    });

    test("createExclusive: the first wins, later ones get false and the content stays; concurrent creators: exactly one wins", async () => {
      const { io, root } = make();
      const p = `${root}/snapshot/snapshot-1`;
      assert.equal(await io.createExclusive(p, "one"), true);
      assert.equal(await io.createExclusive(p, "two"), false);
      assert.equal(await text(io, p), "one");
      for (let round = 0; round < 5; round++) {
        const q = `${root}/snapshot/snapshot-${round + 2}`;
        const results = await Promise.all(Array.from({ length: 6 }, (_, i) => io.createExclusive(q, `writer ${i}`)));
        assert.equal(results.filter(Boolean).length, 1, `round ${round}: ${JSON.stringify(results)}`);
        assert.equal(await text(io, q), `writer ${results.indexOf(true)}`);
      }
    });

    test("exists, isFile, list, listStatus: files and directories of a prefix; a missing directory lists empty", async () => {
      const { io, root } = make();
      await io.writeFile(`${root}/t/schema/schema-0`, "s");
      await io.writeFile(`${root}/t/snapshot/snapshot-1`, "x1");
      await io.writeFile(`${root}/t/snapshot/LATEST`, "1");
      await io.writeFile(`${root}/t/dt=a/bucket-0/data-1.parquet`, "12345");
      await io.mkdirs(`${root}/t/empty`);
      assert.equal(await io.exists(`${root}/t/snapshot/snapshot-1`), true);
      assert.equal(await io.isFile(`${root}/t/snapshot/snapshot-1`), true);
      assert.equal(await io.exists(`${root}/t/snapshot`), true, "a directory exists");
      assert.equal(await io.isFile(`${root}/t/snapshot`), false, "a directory is not a file");
      assert.equal(await io.exists(`${root}/t/empty`), true, "an empty directory made by mkdirs exists");
      assert.equal(await io.exists(`${root}/t/snap`), false, "a name prefix of a directory is not a directory");
      assert.equal(await io.isFile(`${root}/t/snapshot/snapshot-2`), false);
      assert.deepEqual((await io.list(`${root}/t`)).sort(), ["dt=a", "empty", "schema", "snapshot"]);
      assert.deepEqual((await io.list(`${root}/t/snapshot`)).sort(), ["LATEST", "snapshot-1"]);
      assert.deepEqual(await io.list(`${root}/t/empty`), []);
      assert.deepEqual(await io.list(`${root}/nothing-here`), []);
      const st = (await io.listStatus(`${root}/t/dt=a/bucket-0`)).map((s) => ({ name: s.name, kind: s.kind, size: s.size }));
      assert.deepEqual(st, [{ name: "data-1.parquet", kind: "file", size: 5 }]);
      const kinds = Object.fromEntries((await io.listStatus(`${root}/t`)).map((s) => [s.name, s.kind]));
      assert.deepEqual(kinds, { "dt=a": "directory", empty: "directory", schema: "directory", snapshot: "directory" });
    });

    test("copyFile: the content under a second name (a new directory too); deleting either name leaves the other", async () => {
      const { io, root } = make();
      const bytes = randomBytes(3000);
      await io.writeFile(`${root}/c/bucket-0/data-a.parquet`, bytes);
      await io.copyFile(`${root}/c/bucket-0/data-a.parquet`, `${root}/c/bucket-1/data-b.parquet`);
      assert.deepEqual(Buffer.from(await io.readFile(`${root}/c/bucket-1/data-b.parquet`)), bytes);
      assert.equal(await io.delete(`${root}/c/bucket-0/data-a.parquet`), true);
      assert.deepEqual(Buffer.from(await io.readFile(`${root}/c/bucket-1/data-b.parquet`)), bytes, "the copy outlives the original's name");
      await assert.rejects(io.copyFile(`${root}/c/bucket-0/data-a.parquet`, `${root}/c/x`), (e: unknown) => isLakeError(e, "NotFound"));
    });

    test("delete, deleteEmptyDir, deleteTree", async () => {
      const { io, root } = make();
      await io.writeFile(`${root}/d/x`, "x");
      await io.writeFile(`${root}/d/sub/y`, "y");
      assert.equal(await io.delete(`${root}/d/x`), true);
      assert.equal(await io.delete(`${root}/d/x`), false, "gone already");
      assert.equal(await io.deleteEmptyDir(`${root}/d`), false, "not empty");
      await io.mkdirs(`${root}/e`);
      assert.equal(await io.deleteEmptyDir(`${root}/e`), true);
      assert.equal(await io.exists(`${root}/e`), false);
      await io.deleteTree(`${root}/d`);
      assert.equal(await io.exists(`${root}/d`), false);
      assert.equal(await io.exists(`${root}/d/sub/y`), false);
    });
  });
}

describe("S3FileIO beyond the contract", () => {
  test("a file above the multipart threshold goes up in parts and reads back whole", async () => {
    const wh = openWarehouse(store.uri(), { s3: { multipartThreshold: 6 * 1024 * 1024, partSize: 5 * 1024 * 1024 } }) as ReturnType<S3TestStore["open"]>;
    const p = `${wh.root}/big/data.parquet`;
    const bytes = randomBytes(12 * 1024 * 1024 + 123);
    const before = { ...wh.io.requests };
    await wh.io.writeFile(p, bytes);
    const cost = countsSince(before, wh.io.requests);
    // Create, three parts, complete: five requests of the PUT kind, where a single PutObject is one.
    assert.equal(cost.PUT, 5, JSON.stringify(cost));
    assert.deepEqual(Buffer.from(await wh.io.readFile(p)), bytes);
    assert.equal(await wh.io.size(p), bytes.length);
  });

  test("a process killed half-way through a PUT (failpoint io.write.mid, the chaos suite's) leaves no object", () => {
    const wh = store.open();
    const warehouseModule = fileURLToPath(new URL("../../../src/io/warehouse.ts", import.meta.url));
    // The second write dies after half its bytes went out; the first one is whole.
    const child = `import { openWarehouse } from ${JSON.stringify(warehouseModule)};
const { io, root } = openWarehouse(process.env.WH);
await io.writeFile(root + "/mid/first", Buffer.alloc(200000, 1));
await io.writeFile(root + "/mid/second", Buffer.alloc(2000000, 2));
console.log("not killed");`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", child], { env: { ...process.env, WH: store.uri(wh.root.slice(1)), FAILPOINTS: "io.write.mid:kill@2" }, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.signal, "SIGKILL", `${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr, /failpoint io\.write\.mid: SIGKILL/);
    return (async () => {
      assert.deepEqual((await wh.io.listStatus(`${wh.root}/mid`)).map((f) => [f.name, f.size]), [["first", 200000]], "the cut upload created nothing");
      assert.equal(await wh.io.isFile(`${wh.root}/mid/second`), false);
    })();
  });

  /** An S3FileIO whose requests pass through the fault proxy. */
  const viaProxy = (): { io: S3FileIO; root: string } => {
    const { server, bucket } = store;
    const io = new S3FileIO({ bucket, endpoint: proxy.url, region: server.region, forcePathStyle: true, credentials: server.credentials, maxAttempts: 3, requestTimeoutMs: 10_000 });
    return { io, root: `/proxy-${randomBytes(4).toString("hex")}` };
  };

  test("createExclusive - the answer is lost after the put landed: read back, it is ours, true", async () => {
    const { io, root } = viaProxy();
    await io.verifyConditionalPut();
    const p = `${root}/snapshot/snapshot-7`;
    proxy.arm("drop-response", /^PUT [^\n]*snapshot-7/);
    const firedBefore = proxy.fired();
    assert.equal(await io.createExclusive(p, "ours"), true);
    assert.equal(proxy.fired(), firedBefore + 1, "the fault fired");
    assert.equal(await io.readText(p), "ours");
    assert.equal(await io.createExclusive(p, "ours again"), false, "a later create is still refused");
    io.destroy();
  });

  test("createExclusive - the request is lost while another committer creates the object: read back, it is theirs, false", async () => {
    const { io, root } = viaProxy();
    await io.verifyConditionalPut();
    const other = store.open("/");
    const p = `${root}/snapshot/snapshot-8`;
    // The other committer's create lands first; ours is lost on the way, so its outcome is unknown until read back.
    assert.equal(await other.io.createExclusive(p, "theirs"), true);
    proxy.arm("drop-request", /^PUT [^\n]*snapshot-8/);
    const firedBefore = proxy.fired();
    assert.equal(await io.createExclusive(p, "ours"), false);
    assert.equal(proxy.fired(), firedBefore + 1, "the fault fired");
    assert.equal(await io.readText(p), "theirs");
    io.destroy();
  });

  test("createExclusive - the request is lost and nobody created the object: the put is tried again and wins", async () => {
    const { io, root } = viaProxy();
    await io.verifyConditionalPut();
    const p = `${root}/snapshot/snapshot-9`;
    proxy.arm("drop-request", /^PUT [^\n]*snapshot-9/);
    assert.equal(await io.createExclusive(p, "ours"), true);
    assert.equal(await io.readText(p), "ours");
    io.destroy();
  });

  test("the start-up probe passes on SeaweedFS and leaves nothing behind; a missing bucket is named", async () => {
    const wh = store.open();
    await checkWarehouse(wh.io);
    assert.deepEqual(await wh.io.list(`${wh.root}/.natslake`), [], "the probe object is removed");
    const missing = openWarehouse(`s3://no-such-bucket-${randomBytes(3).toString("hex")}/x?endpoint=${encodeURIComponent(store.server.endpoint)}`);
    await assert.rejects(checkWarehouse(missing.io), /no such bucket/);
  });

  test("warehouse URIs: s3://bucket/prefix with settings; credentials in the URI and bad names are refused", () => {
    assert.deepEqual(parseWarehouse("s3://wh-bucket/a/b/?endpoint=http://127.0.0.1:9000&region=eu-west-1&path-style=false"), {
      kind: "s3",
      bucket: "wh-bucket",
      prefix: "a/b",
      endpoint: "http://127.0.0.1:9000",
      region: "eu-west-1",
      pathStyle: false,
    });
    assert.deepEqual(parseWarehouse("s3://wh-bucket"), { kind: "s3", bucket: "wh-bucket", prefix: "" });
    assert.equal(openWarehouse("s3://wh-bucket/p").root, "/p");
    assert.equal(openWarehouse("s3://wh-bucket").root, "/");
    assert.deepEqual(parseWarehouse("file:///tmp/wh"), { kind: "local", path: "/tmp/wh" });
    assert.throws(() => parseWarehouse("s3://AKIA:secret@wh-bucket/p"), /must not carry credentials/);
    assert.throws(() => parseWarehouse("s3://Bad_Bucket/p"), /not a valid bucket name/);
    assert.throws(() => parseWarehouse("s3://wh-bucket/p?secret=1"), /unknown setting 'secret'/);
    assert.throws(() => parseWarehouse("gs://wh-bucket/p"), /unsupported warehouse URI/);
  });
});
