/**
 * What an active leader needs from its lease keeper: whether it may still act (monotonic deadline not passed), a
 * way to stop renewing, and renewal statistics (renew lag must stay well below the TTL, or encoding work is starving
 * the event loop). The Redis-backed implementation is cluster/redis/lease.ts's LeaseKeeper.
 */
export interface LeaseKeeperLike {
  isValid(): boolean;
  stop(): void | Promise<void>;
  stats(): { renewLagMsMax: number; renewLagMsLast: number; renewals: number; failures: number };
}
