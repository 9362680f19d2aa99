/**
 * Nemesis tools for the chaos suite, and factories that wrap them as `Nemesis` objects (chaos/types.ts) so a scenario
 * can inject and heal every fault the same way and record it:
 *
 *   const proxy = await TcpProxy.start({ targetPort: nats.port });     // point node n1 at proxy.url
 *   const partition = proxyCut(proxy, { kind: "node", id: "n1" }, { mode: "blackhole" });
 *   const rec = await partition.inject();      // FaultRecord { name: "partition-blackhole", injectedAt, detail }
 *   ...
 *   await partition.heal(rec);                 // sets rec.healedAt
 *
 * Every inject/heal is bounded in time (it rejects instead of hanging) and `heal` stamps `record.healedAt`.
 * Resources (proxies, disks, control files) belong to the caller, who closes/unmounts them in a `finally`.
 *
 * What works on this machine and what does not is summarised in each tool's module comment.
 */
export { TcpProxy, type CutMode, type ProxyState, type TcpProxyOptions, type TcpProxyStats } from "./tcp-proxy.ts";
export {
  mountSmallDisk,
  isMountPoint,
  DiskMountUnavailable,
  type SmallDisk,
  type SmallDiskKind,
  type SmallDiskOptions,
  type FillResult,
} from "./disk-full.ts";
export {
  buildSlowFsyncShim,
  slowFsyncEnv,
  createSlowFsyncControl,
  attachSlowFsync,
  chaosCacheDir,
  SYNC_SYSCALLS,
  type SlowFsyncControl,
  type SlowFsyncAttachment,
} from "./slow-fsync/slow-fsync.ts";
export {
  clockSkewEnv,
  createClockSkew,
  findLibfaketime,
  requireLibfaketime,
  libfaketimeCandidates,
  faketimeOffset,
  ClockSkewUnavailable,
  type ClockSkew,
  type ClockSkewOptions,
} from "./clock-skew.ts";
export { combineEnv, childEnv } from "./env.ts";
export {
  targetLabel,
  makeNemesis,
  proxyCut,
  proxyLatency,
  diskFull,
  slowFsync,
  slowFsyncAttached,
  clockSkew,
} from "./nemeses.ts";
// The soak's infrastructure nemeses (chaos/scenarios/soak.ts picks them up): see ./infra.ts for which and why.
export { infraNemeses, natsSlowFsync, leaderSlowFsync, writerPartition } from "./infra.ts";

