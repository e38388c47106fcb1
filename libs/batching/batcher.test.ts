import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.js';

describe('Batcher', () => {
  it('gathers the items of one event-loop turn into one batch, outputs in order', async () => {
    const batches: number[][] = [];
    const batcher = new Batcher<number, number>(
      async (items) => {
        batches.push(items);
        return items.map((n) => n * 10);
      },
      { lingerMs: 0, maxWeight: 100 },
    );
    const outputs = await Promise.all([1, 2, 3].map((n) => batcher.submit(n)));
    expect(outputs).toEqual([10, 20, 30]);
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('waits the linger for more items, and closes early at the weight limit', async () => {
    const batches: string[][] = [];
    const batcher = new Batcher<string, string>(
      async (items) => {
        batches.push(items);
        return items;
      },
      { lingerMs: 30, maxWeight: 5, weight: (item) => item.length },
    );
    const first = batcher.submit('a');
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = batcher.submit('b');
    const heavy = batcher.submit('xxxxx');
    await Promise.all([first, second, heavy]);
    expect(batches).toEqual([['a', 'b', 'xxxxx']]);
    await batcher.submit('late');
    expect(batches.at(-1)).toEqual(['late']);
  });

  it('with maxInFlight, goes at once while a slot is free and lingers only while none is', async () => {
    const batches: number[][] = [];
    const releases: (() => void)[] = [];
    const batcher = new Batcher<number, number>(
      (items) => {
        batches.push(items);
        return new Promise((resolve) => releases.push(() => resolve(items)));
      },
      { lingerMs: 10_000, maxInFlight: 1, maxWeight: 100 },
    );
    const first = batcher.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1]]);
    // The slot is taken: these wait, for the linger at most, or until the slot frees.
    const waiting = [batcher.submit(2), batcher.submit(3)];
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(batches).toEqual([[1]]);
    releases.shift()!();
    await first;
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(batches).toEqual([[1], [2, 3]]);
    releases.shift()!();
    expect(await Promise.all(waiting)).toEqual([2, 3]);
  });

  it("rejects every item of a failed batch with the batch's error", async () => {
    const batcher = new Batcher<number, number>(
      async () => {
        throw new Error('store down');
      },
      { lingerMs: 0, maxWeight: 10 },
    );
    const results = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect((results[0] as PromiseRejectedResult).reason.message).toBe('store down');
  });

  it('flush sends the open batch and waits for it', async () => {
    let done = 0;
    const batcher = new Batcher<number, void>(
      async (items) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        done += items.length;
        return items.map(() => undefined);
      },
      { lingerMs: 10_000, maxWeight: 100 },
    );
    void batcher.submit(1);
    void batcher.submit(2);
    await batcher.flush();
    expect(done).toBe(2);
  });
});
