import { test } from "node:test";
import assert from "node:assert/strict";
import { createServer, connect, type Socket } from "node:net";
import { infraNemeses, leaderSlowFsync, natsSlowFsync, writerPartition } from "../../../chaos/nemesis/index.ts";
import { createRng } from "../../../chaos/prng.ts";
import type { NemesisContext, NodeExit, TopologyHandle } from "../../../chaos/types.ts";

/** A topology stand-in: writers w1, w2 owning buckets, node starts/stops recorded, no real processes. */
function fakeTopology(opts: { natsPorts?: number[]; natsRunning?: boolean; leader?: string | null; owners?: string[] } = {}) {
  const running = new Set(["w1", "w2", "c1"]);
  const starts: Array<{ id: string; nats?: string }> = [];
  const owners = opts.owners ?? ["w1", "w2"];
  const t: Partial<TopologyHandle> = {
    natsUrls: (opts.natsPorts ?? [4222]).map((p) => `nats://127.0.0.1:${p}`),
    natsPid: () => (opts.natsRunning === false ? undefined : process.pid),
    nodePid: (id: string) => (running.has(id) ? process.pid : undefined),
    isRunning: (id: string) => running.has(id),
    leader: () => Promise.resolve(opts.leader === undefined ? "c1" : opts.leader),
    bucketOwners: () => Promise.resolve(new Map(owners.map((o, i) => [i, o] as [number, string]))),
    signalNode: (id: string) => {
      running.delete(id);
    },
    waitExit: (id: string) => Promise.resolve({ id, pid: 1, code: 0, signal: null, at: Date.now(), requested: true } satisfies NodeExit),
    startNode: (id: string, o: { nats?: string } = {}) => {
      running.add(id);
      starts.push({ id, ...(o.nats !== undefined ? { nats: o.nats } : {}) });
    },
  };
  const ctx: NemesisContext = { topology: t as TopologyHandle, rng: createRng(7), log: () => undefined };
  return { ctx, starts, running };
}

test("infra nemeses - the soak's list names each factory once", () => {
  assert.deepEqual(
    infraNemeses.map((n) => n.name),
    ["nats-slow-fsync", "leader-slow-fsync", "writer-partition"],
  );
  for (const n of infraNemeses) assert.ok(n.weight > 0 && typeof n.make === "function");
});

test("infra nemeses - not applicable without their target", async () => {
  assert.equal(await natsSlowFsync(fakeTopology({ natsRunning: false }).ctx), null, "no live nats-server");
  assert.equal(await leaderSlowFsync(fakeTopology({ leader: null }).ctx), null, "no leader");
  assert.equal(await writerPartition()(fakeTopology({ owners: ["w1", "w1"] }).ctx), null, "a single owning writer");
});

test("infra nemeses - writer partition: restart behind a proxy, blackhole, heal, restart clean, proxy closed", async () => {
  // The "nats-server": an echo server.
  const echo = createServer((s) => {
    s.on("error", () => undefined);
    s.pipe(s);
  });
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", () => r()));
  const port = (echo.address() as { port: number }).port;
  const { ctx, starts, running } = fakeTopology({ natsPorts: [port] });
  let client: Socket | undefined;
  try {
    const n = await writerPartition(300)(ctx);
    assert.ok(n);
    const rec = await n.inject();
    assert.equal(rec.name, "partition-blackhole");
    assert.equal(rec.recoveryFrom, "injected");
    const victim = rec.target.replace(/^node:/, "");
    assert.ok(["w1", "w2"].includes(victim));
    const viaProxy = starts.at(-1);
    assert.ok(viaProxy?.id === victim && viaProxy.nats !== undefined && viaProxy.nats !== `nats://127.0.0.1:${port}`, "restarted with the proxy's URL");

    // Through the cut proxy nothing comes back.
    const proxyPort = Number(new URL(viaProxy.nats!.replace(/^nats:/, "http:")).port);
    const c = connect(proxyPort, "127.0.0.1");
    client = c;
    c.on("error", () => undefined); // reset when the proxy closes
    const got: Buffer[] = [];
    c.on("data", (b: Buffer) => got.push(b));
    c.write("ping");
    await new Promise((r) => setTimeout(r, 150));
    assert.equal(Buffer.concat(got).toString(), "", "blackholed");

    await n.heal(rec);
    assert.ok(rec.healedAt !== undefined && rec.healedAt - rec.injectedAt >= 300, "held for the cut's length");
    const last = starts.at(-1);
    assert.ok(last?.id === victim && last.nats === undefined, "restarted clean");
    assert.ok(running.has(victim));
    // The proxy is closed: new connections are refused.
    await assert.rejects(
      new Promise<void>((resolve, reject) => {
        const s = connect(proxyPort, "127.0.0.1", () => {
          s.destroy();
          resolve();
        });
        s.on("error", reject);
      }),
    );
  } finally {
    client?.destroy();
    echo.close();
  }
});
