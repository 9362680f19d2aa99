/**
 * The local servers (tests and `natslake up`) never silently share another process's server: a port picked for a
 * server can be taken by another one before the server binds it, and a server that then fails to bind must not look
 * started because something answers on its port.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { createConnection } from "node:net";
import { startNats, startRedis } from "../helpers/servers.ts";

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The first line a connection to `port` receives, after sending `greet`. */
function firstLine(port: number, greet?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ port, host: "127.0.0.1" }, () => {
      if (greet) sock.write(greet);
    });
    let text = "";
    sock.on("data", (b: Buffer) => {
      text += b.toString();
      const nl = text.indexOf("\n");
      if (nl >= 0) {
        sock.destroy();
        resolve(text.slice(0, nl));
      }
    });
    sock.once("error", reject);
  });
}

test("local servers - a server whose port another server holds is refused, not shared", { timeout: 60_000 }, async () => {
  const nats = await startNats();
  const redis = await startRedis();
  try {
    await assert.rejects(startNats({ port: nats.port }), /port \d+ is held by another server|address already in use/i);
    await assert.rejects(startRedis({ port: redis.port }), /port \d+ is held by another server|address already in use/i);
    // Across kinds too: a redis-server where a nats-server listens, and the reverse.
    await assert.rejects(startRedis({ port: nats.port }), /port \d+ is held by another server|address already in use/i);
    await assert.rejects(startNats({ port: redis.port }), /port \d+ is held by another server|address already in use/i);
    // The servers that were there still answer, and are the ones started first.
    assert.match(await firstLine(nats.port), /^INFO /);
    assert.match(await firstLine(redis.port, "PING\r\n"), /^\+PONG/);
    assert.ok(alive(nats.pid) && alive(redis.pid));
  } finally {
    await nats.stop();
    await redis.stop();
  }
});

test("local servers - servers started at once get distinct ports, each its own", { timeout: 60_000 }, async () => {
  const servers = await Promise.all([...Array.from({ length: 4 }, () => startNats()), ...Array.from({ length: 4 }, () => startRedis())]);
  try {
    assert.equal(new Set(servers.map((s) => s.port)).size, servers.length);
    for (const s of servers) assert.ok(alive(s.pid), `server ${s.url} runs`);
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
});
