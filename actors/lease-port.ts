export interface LeaseGrant { token: string; fencingEpoch: number; acquiredAtMono: number; }
export interface Lease {
  /** Tries once to take the lease; null when someone else holds it. */
  tryAcquire(): Promise<LeaseGrant | null>;
  /** Extends the lease if this process still holds it (compare-and-renew); false when it was lost. */
  renew(grant: LeaseGrant): Promise<boolean>;
  /** Releases the lease if still held (compare-and-delete). */
  release(grant: LeaseGrant): Promise<void>;
  /** Monotonic-clock deadline (performance.now() ms) until which the holder may act without renewing. */
  validUntil(): number;
  readonly ttlMs: number;
}
