/**
 * The fault factories: each wraps one nemesis tool (proxy, small disk, slow fsync, clock skew) as a `Nemesis`
 * (chaos/types.ts) whose inject and heal are bounded in time and recorded. `index.ts` re-exports them with the tools.
 */
import type { FaultRecord, Nemesis, Target } from "../types.ts";
import { withTimeout } from "./run.ts";
import type { ClockSkew } from "./clock-skew.ts";
import type { SmallDisk } from "./disk-full.ts";
import { attachSlowFsync, type SlowFsyncAttachment, type SlowFsyncControl } from "./slow-fsync/slow-fsync.ts";
import type { CutMode, TcpProxy } from "./tcp-proxy.ts";

/** How long an inject or heal may take before it rejects. */
const STEP_TIMEOUT_MS = 30_000;

/** The `target` string of a FaultRecord: `node:n1`, `nats:0`, `redis`, `load`, or the string given. */
export function targetLabel(t: Target | string): string {
  if (typeof t === "string") return t;
  switch (t.kind) {
    case "node":
      return `node:${t.id}`;
    case "nats":
      return `nats:${t.index}`;
    case "redis":
      return "redis";
    case "load":
      return "load";
  }
}

/** Builds a Nemesis from an inject step (returning detail) and a heal step; both bounded, heal stamps healedAt. */
export function makeNemesis(
  name: string,
  target: Target | string,
  steps: { inject: () => Promise<Record<string, unknown>>; heal: (record: FaultRecord) => Promise<Record<string, unknown> | void> },
  timeoutMs = STEP_TIMEOUT_MS,
): Nemesis {
  const label = targetLabel(target);
  return {
    name,
    async inject(): Promise<FaultRecord> {
      const injectedAt = Date.now();
      const detail = await withTimeout(steps.inject(), timeoutMs, `${name} inject on ${label}`);
      return { name, target: label, injectedAt, detail };
    },
    async heal(record: FaultRecord): Promise<void> {
      const more = await withTimeout(steps.heal(record), timeoutMs, `${name} heal on ${label}`);
      record.healedAt = Date.now();
      if (more) record.detail = { ...record.detail, ...more };
    },
  };
}

/**
 * Network partition between the proxy's clients and its server: `reset` (RST both ways, new connections reset) or
 * `blackhole` (connections freeze, new ones get no data). Heal: connections are forwarded again.
 */
export function proxyCut(proxy: TcpProxy, target: Target | string, opts: { mode?: CutMode } = {}): Nemesis {
  const mode = opts.mode ?? "reset";
  return makeNemesis(`partition-${mode}`, target, {
    inject: async () => {
      const connections = proxy.cut(mode);
      await Promise.resolve();
      return { mode, proxyPort: proxy.port, targetPort: proxy.targetPort, connections };
    },
    heal: async () => {
      proxy.heal();
      await Promise.resolve();
      return { statsAtHeal: proxy.stats() };
    },
  });
}

/** Added latency (each direction) through the proxy; heal restores the latency it replaced. */
export function proxyLatency(proxy: TcpProxy, ms: number, target: Target | string, opts: { jitterMs?: number } = {}): Nemesis {
  let previous = 0;
  return makeNemesis("latency", target, {
    inject: async () => {
      previous = proxy.latencyMs;
      proxy.latency(ms, opts.jitterMs ?? 0);
      await Promise.resolve();
      return { ms, jitterMs: opts.jitterMs ?? 0, proxyPort: proxy.port };
    },
    heal: async () => {
      proxy.latency(previous);
      await Promise.resolve();
    },
  });
}

/** Disk full: fills the small disk until `leaveBytes` are free (default 0); heal deletes the filler. */
export function diskFull(disk: SmallDisk, target: Target | string, opts: { leaveBytes?: number } = {}): Nemesis {
  return makeNemesis("disk-full", target, {
    inject: async () => {
      const r = await disk.fill(opts.leaveBytes ?? 0);
      return { dir: disk.dir, kind: disk.kind, sizeBytes: disk.sizeBytes, filledBytes: r.written, freeBytes: r.freeBytes };
    },
    heal: async () => ({ freeBytesAfterHeal: await disk.free() }),
  });
}

/** Slow fsync through the LD_PRELOAD shim's control file (the process was started with `control.env`); heal: 0 ms. */
export function slowFsync(control: SlowFsyncControl, ms: number, target: Target | string): Nemesis {
  return makeNemesis("slow-fsync", target, {
    inject: async () => {
      await control.set(ms);
      return { ms, via: "ld-preload" };
    },
    heal: async () => {
      await control.set(0);
    },
  });
}

/**
 * Slow fsync of any running process (Go nats-server included) through strace; `pid` may be a function, so the
 * current process of a restarted target is used. Heal detaches strace.
 */
export function slowFsyncAttached(pid: number | (() => number), ms: number, target: Target | string): Nemesis {
  const attached = new Map<number, SlowFsyncAttachment>();
  let seq = 0;
  return makeNemesis("slow-fsync", target, {
    inject: async () => {
      const p = typeof pid === "function" ? pid() : pid;
      const a = await attachSlowFsync(p, ms);
      const id = ++seq;
      attached.set(id, a);
      return { ms, via: "strace", pid: p, attachment: id };
    },
    heal: async (record) => {
      const id = record.detail?.["attachment"];
      const a = typeof id === "number" ? attached.get(id) : undefined;
      if (a) {
        attached.delete(id as number);
        await a.detach();
      }
    },
  });
}

/** Wall-clock skew of the processes started with `skew.env`; heal sets the offset back to 0. */
export function clockSkew(skew: ClockSkew, offsetMs: number, target: Target | string): Nemesis {
  return makeNemesis(`clock-skew`, target, {
    inject: async () => {
      await skew.set(offsetMs);
      return { offsetMs };
    },
    heal: async () => {
      await skew.set(0);
    },
  });
}
