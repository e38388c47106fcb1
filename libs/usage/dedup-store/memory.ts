import type { RateLimitStore } from '../../rate-limit/index.js';
import type { DedupEntry, Reservation, ReservationResult, UsageDedupStore } from './store.js';

interface Stored {
  value: string;
  expiresAt: number;
}

const SWEEP_INTERVAL_MS = 60_000;

/**
 * The embedded twin of the Redis store: one process, so a Map is the shared state, and counting
 * goes through the same rate-limit store every other route of the process uses. Checking and setting
 * an identity happen without yielding to another task, which is what makes `reserve` a SET NX here.
 */
export class MemoryUsageDedupStore implements UsageDedupStore {
  private readonly records = new Map<string, Stored>();
  private nextSweepAt = 0;

  constructor(
    private readonly rateLimitStore: RateLimitStore,
    private readonly now: () => number = Date.now,
  ) {}

  async reserve({ bucket, entries, ttlSeconds }: Reservation): Promise<ReservationResult> {
    let count = 0;
    if (bucket) {
      const decision = await this.rateLimitStore.consume(bucket.key, bucket.limit, bucket.ttlSeconds);
      if (!decision.allowed)
        return { count: decision.count, allowed: false, existing: entries.map(() => null) };
      count = decision.count;
    }
    const now = this.now();
    this.sweep(now);
    const existing = entries.map(({ key, pending }) => {
      const found = this.read(key, now);
      if (found !== null) return found;
      this.records.set(key, { value: pending, expiresAt: now + ttlSeconds * 1000 });
      return null;
    });
    return { count, allowed: true, existing };
  }

  async replace(key: string, expected: string, next: string, ttlSeconds: number): Promise<string | null> {
    const now = this.now();
    const current = this.read(key, now);
    if (current !== expected) return current;
    this.records.set(key, { value: next, expiresAt: now + ttlSeconds * 1000 });
    return next;
  }

  async release(entries: readonly DedupEntry[]): Promise<void> {
    const now = this.now();
    for (const { key, pending } of entries) if (this.read(key, now) === pending) this.records.delete(key);
  }

  async get(key: string): Promise<string | null> {
    return this.read(key, this.now());
  }

  async flush(): Promise<void> {}

  private read(key: string, now: number): string | null {
    const stored = this.records.get(key);
    if (!stored) return null;
    if (stored.expiresAt <= now) {
      this.records.delete(key);
      return null;
    }
    return stored.value;
  }

  private sweep(now: number): void {
    if (now < this.nextSweepAt) return;
    this.nextSweepAt = now + SWEEP_INTERVAL_MS;
    for (const [key, stored] of this.records) if (stored.expiresAt <= now) this.records.delete(key);
  }
}
