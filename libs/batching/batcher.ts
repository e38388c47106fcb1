import { InFlightRequests } from '../shutdown/index.js';

export interface BatcherOptions<I> {
  /**
   * How long the first item of a batch may wait for others. 0 still gathers every item submitted
   * in the same turn of the event loop (a batch closes on setImmediate), which is what many
   * requests that arrived in one network read produce.
   */
  lingerMs: number;
  /**
   * With it, a batch waits out the linger only while this many batches are already running; with a
   * free slot it goes at the end of the current turn. Latency stays low under light load, and
   * batches grow with the load (Nagle's algorithm, with the linger as its bound).
   */
  maxInFlight?: number;
  /** A batch closes at once when the total weight of its items reaches this. */
  maxWeight: number;
  /** Weight of one item (default 1), e.g. the number of events it carries. */
  weight?: (item: I) => number;
}

interface Pending<I, O> {
  item: I;
  resolve(output: O): void;
  reject(error: unknown): void;
}

/**
 * Gathers items submitted by concurrent callers and hands them to `run` as one batch; each caller
 * gets the output at its own position, or the batch's error. The one tool behind "many requests,
 * one Redis call" and "many requests, one produce call".
 */
export class Batcher<I, O> {
  private open: Pending<I, O>[] = [];
  private openWeight = 0;
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  /**
   * Batches under way, counted (libs/shutdown's count of work in flight), not a Set of their
   * promises: a long-lived Set with an entry added and deleted per batch rehashes every few batches,
   * and V8 links each discarded table to the next, so once one table is old every later one
   * survives each scavenge with the batches it held.
   */
  private readonly running = new InFlightRequests();

  constructor(
    private readonly run: (items: I[]) => Promise<readonly O[]>,
    private readonly options: BatcherOptions<I>,
  ) {}

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.open.push({ item, resolve, reject });
      this.openWeight += this.options.weight?.(item) ?? 1;
      if (this.openWeight >= this.options.maxWeight) this.close();
      else this.schedule();
    });
  }

  /** Closes the open batch now and waits until every batch has its outcome. */
  async flush(): Promise<void> {
    this.close();
    while (this.running.count) await this.running.idle();
  }

  private schedule(): void {
    if (this.immediate !== undefined) return;
    const { lingerMs, maxInFlight } = this.options;
    const slotFree = maxInFlight !== undefined && this.running.count < maxInFlight;
    if (lingerMs > 0 && !slotFree) {
      this.timer ??= setTimeout(() => this.close(), lingerMs);
    } else {
      this.immediate = setImmediate(() => this.close());
    }
  }

  private close(): void {
    clearTimeout(this.timer);
    clearImmediate(this.immediate);
    this.timer = undefined;
    this.immediate = undefined;
    const batch = this.open;
    if (!batch.length) return;
    this.open = [];
    this.openWeight = 0;
    this.running.begin();
    void this.execute(batch).finally(() => {
      this.running.finish();
      // A slot is free: a batch that was lingering for one goes now.
      if (this.open.length && this.options.maxInFlight !== undefined) this.schedule();
    });
  }

  private async execute(batch: Pending<I, O>[]): Promise<void> {
    let outputs: readonly O[];
    try {
      outputs = await this.run(batch.map((pending) => pending.item));
    } catch (error) {
      for (const pending of batch) pending.reject(error);
      return;
    }
    if (outputs.length !== batch.length) {
      // a caller must never take another's output, or none, for its own
      const error = new Error(`a batch of ${batch.length} items gave ${outputs.length} outputs`);
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outputs[i] as O);
  }
}
