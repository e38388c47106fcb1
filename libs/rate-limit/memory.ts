import type { RateLimitStore } from './store.js';

/** The embedded twin of the Redis store: one process, so a Map is the shared bucket. */
export class MemoryRateLimitStore implements RateLimitStore {
  private readonly buckets = new Map<string, { count: number; expiresAt: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  async consume(
    bucket: string,
    limit: number,
    ttlSeconds: number,
  ): Promise<{ count: number; allowed: boolean }> {
    const now = this.now();
    let entry = this.buckets.get(bucket);
    if (!entry || entry.expiresAt <= now) {
      this.sweep(now);
      entry = { count: 0, expiresAt: now + ttlSeconds * 1000 };
      this.buckets.set(bucket, entry);
    }
    if (entry.count >= limit) return { count: entry.count, allowed: false };
    entry.count += 1;
    return { count: entry.count, allowed: true };
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.buckets) if (entry.expiresAt <= now) this.buckets.delete(key);
  }
}
