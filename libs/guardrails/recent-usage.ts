import { parseScaled } from '../money/index.js';
import type { UsageEventRecord } from '../usage/index.js';

/** Quantities are exact to 8 fractional digits, as the usage log carries them. */
const SCALE = 8;
const BUCKET_MS = 1000;

interface ItemUsage {
  /**
   * Its seconds (recordedAt / BUCKET_MS) in ascending order, and the positive quantity of each
   * (1e-8 units): a bound reads back from the newest second, so it visits only the seconds it sums.
   */
  buckets: number[];
  quantities: bigint[];
  /** The newest bucket forgotten: a bound starting at or before it cannot be drawn. */
  prunedThrough: number;
}

/**
 * The positive quantity each item received on the usage log, per second of `recordedAt`, as this
 * process read it: what has moved an item's quantity since an exact reading, bounded from above
 * (docs/decisions.md, "Quantity alerts are read only near their threshold, in a group that does
 * not wait"). It over-counts on
 * purpose (a redelivered event counts again, a void does not subtract, the whole second holding
 * the start counts) and never under-counts what this process read: so `reading + since(...)`
 * below a threshold proves the item has not reached it, and the exact read can be skipped.
 */
export class RecentUsage {
  /** orgId -> itemId -> what it received. */
  private readonly items = new Map<number, Map<number, ItemUsage>>();
  /** The bucket the last prune forgot everything before. */
  private prunedBefore = Number.NEGATIVE_INFINITY;

  add(events: readonly UsageEventRecord[]): void {
    // a batch repeats few quantities: each text parsed once
    const parsed = new Map<string, bigint>();
    for (const event of events) {
      let quantity = parsed.get(event.quantity);
      if (quantity === undefined) {
        quantity = parseScaled(event.quantity, SCALE, 'half-even');
        parsed.set(event.quantity, quantity);
      }
      if (quantity <= 0n) continue;
      let org = this.items.get(event.orgId);
      if (!org) {
        org = new Map();
        this.items.set(event.orgId, org);
      }
      let item = org.get(event.subscriptionItemId);
      if (!item) {
        item = { buckets: [], quantities: [], prunedThrough: Number.NEGATIVE_INFINITY };
        org.set(event.subscriptionItemId, item);
      }
      const bucket = Math.floor(event.recordedAtMs / BUCKET_MS);
      // an event older than what was forgotten still counts where a bound would look for it
      const at = Math.max(bucket, item.prunedThrough + 1);
      // events arrive about in order: the place is found from the newest second back
      let i = item.buckets.length - 1;
      while (i >= 0 && item.buckets[i]! > at) i--;
      if (i >= 0 && item.buckets[i] === at) item.quantities[i]! += quantity;
      else {
        item.buckets.splice(i + 1, 0, at);
        item.quantities.splice(i + 1, 0, quantity);
      }
    }
  }

  /**
   * What the item received from events recorded at or after `sinceMs` (and a little before), or
   * undefined when events from then on may have been forgotten (prune).
   */
  since(orgId: number, itemId: number, sinceMs: number): bigint | undefined {
    const item = this.items.get(orgId)?.get(itemId);
    if (!item) return 0n;
    const first = Math.floor(sinceMs / BUCKET_MS);
    if (first <= item.prunedThrough) return undefined;
    let total = 0n;
    for (let i = item.buckets.length - 1; i >= 0 && item.buckets[i]! >= first; i--)
      total += item.quantities[i]!;
    return total;
  }

  /**
   * Forgets the quantities of events recorded before `beforeMs`, remembering only that it did
   * (one number per item), so a bound reaching back that far answers undefined.
   */
  prune(beforeMs: number): void {
    const first = Math.floor(beforeMs / BUCKET_MS);
    // once per bucket: what a repeat would forget was added since, and keeping it over-counts only
    if (first <= this.prunedBefore) return;
    this.prunedBefore = first;
    for (const org of this.items.values()) {
      for (const item of org.values()) {
        let forgotten = 0;
        while (forgotten < item.buckets.length && item.buckets[forgotten]! < first) forgotten++;
        if (forgotten === 0) continue;
        item.prunedThrough = Math.max(item.prunedThrough, item.buckets[forgotten - 1]!);
        item.buckets.splice(0, forgotten);
        item.quantities.splice(0, forgotten);
      }
    }
  }
}
