/**
 * A first-in first-out queue of items with a size in bytes, from which batches are taken by
 * count and bytes, and into which a batch that must be sent again is put back at the front (so
 * it goes before what was reported after it). Amortized O(1) per item: items live in an array
 * read from a moving head, compacted when the head passes half of it.
 */
export class EventQueue<T extends { bytes: number }> {
  private items: T[] = [];
  private head = 0;
  private totalBytes = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  /** The bytes of every item queued. */
  get bytes(): number {
    return this.totalBytes;
  }

  push(item: T): void {
    this.items.push(item);
    this.totalBytes += item.bytes;
  }

  /**
   * The oldest items, at most `maxItems` and, past the first, at most `maxBytes` of them in all
   * (the first is always taken: one item over the bound is sent alone, never kept forever).
   */
  take(maxItems: number, maxBytes: number): T[] {
    const start = this.head;
    let end = start;
    let bytes = 0;
    const limit = Math.min(this.items.length, start + maxItems);
    while (end < limit) {
      const size = this.items[end]!.bytes;
      if (end > start && bytes + size > maxBytes) break;
      bytes += size;
      end++;
    }
    const batch = this.items.slice(start, end);
    this.head = end;
    this.totalBytes -= bytes;
    this.compact();
    return batch;
  }

  /** Puts `batch` back before everything queued, in its order. */
  putFront(batch: readonly T[]): void {
    if (batch.length === 0) return;
    let bytes = 0;
    for (const item of batch) bytes += item.bytes;
    this.totalBytes += bytes;
    if (this.head >= batch.length) {
      this.head -= batch.length;
      for (let i = 0; i < batch.length; i++) this.items[this.head + i] = batch[i]!;
    } else {
      this.items = [...batch, ...this.items.slice(this.head)];
      this.head = 0;
    }
  }

  /** Every item, oldest first; the queue is left empty. */
  drain(): T[] {
    const all = this.items.slice(this.head);
    this.items = [];
    this.head = 0;
    this.totalBytes = 0;
    return all;
  }

  private compact(): void {
    if (this.head === this.items.length) {
      this.items = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }
}
