import { parseScaled } from '../money/index.js';
import type { UsageEventRecord } from '../usage/index.js';

/** Quantities are exact to 8 fractional digits, as the usage log carries them. */
const SCALE = 8;
const BUCKET_MS = 1000;

/**
 * The positive quantity each item received on the usage log, per second of `recordedAt`, as this
 * process read it: what has moved an item's quantity since an exact reading, bounded from above
 * (docs/decisions.md, "Quantity alerts are read only near their threshold"). It over-counts on
 * purpose (a redelivered event counts again, a void does not subtract, the whole second holding
 * the start counts) and never under-counts what this process read: so `reading + since(...)`
 * below a threshold proves the item has not reached it, and the exact read can be skipped.
 */
export class RecentUsage {
  /** `${orgId}:${itemId}` -> bucket (recordedAt / BUCKET_MS) -> positive quantity (1e-8 units). */
  private readonly items = new Map<string, Map<number, bigint>>();

  add(events: readonly UsageEventRecord[]): void {
    for (const event of events) {
      const quantity = parseScaled(event.quantity, SCALE, 'half-even');
      if (quantity <= 0n) continue;
      const key = itemKey(event.orgId, event.subscriptionItemId);
      let buckets = this.items.get(key);
      if (!buckets) {
        buckets = new Map();
        this.items.set(key, buckets);
      }
      const bucket = Math.floor(event.recordedAtMs / BUCKET_MS);
      buckets.set(bucket, (buckets.get(bucket) ?? 0n) + quantity);
    }
  }

  /** What the item received from events recorded at or after `sinceMs` (and a little before). */
  since(orgId: number, itemId: number, sinceMs: number): bigint {
    const buckets = this.items.get(itemKey(orgId, itemId));
    if (!buckets) return 0n;
    const first = Math.floor(sinceMs / BUCKET_MS);
    let total = 0n;
    for (const [bucket, quantity] of buckets) if (bucket >= first) total += quantity;
    return total;
  }

  /** Forgets events recorded before `beforeMs` (no bound ever asks for them again). */
  prune(beforeMs: number): void {
    const first = Math.floor(beforeMs / BUCKET_MS);
    for (const [key, buckets] of this.items) {
      for (const bucket of buckets.keys()) if (bucket < first) buckets.delete(bucket);
      if (buckets.size === 0) this.items.delete(key);
    }
  }

  get size(): number {
    return this.items.size;
  }
}

function itemKey(orgId: number, itemId: number): string {
  return `${orgId}:${itemId}`;
}
