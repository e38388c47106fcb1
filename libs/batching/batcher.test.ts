import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { Batcher, type BatcherOptions } from './batcher.js';

/** A batcher answering each item with itself, recording the batches it was given. */
function echoBatcher<T>(options: BatcherOptions<T>): { batches: T[][]; batcher: Batcher<T, T> } {
  const batches: T[][] = [];
  const batcher = new Batcher<T, T>(async (items) => {
    batches.push(items);
    return items;
  }, options);
  return { batches, batcher };
}

/** The end of the current turn of the event loop (a batch with a free slot closes on setImmediate). */
const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * With one slot and a long linger, batches settled one after another each go at the end of their
 * turn: a settled batch frees its slot (leaves the set of batches in flight) before its caller
 * hears of it. Fails within a few turns, never waiting out the linger.
 */
async function settledBatchesLeaveTheirSlot(): Promise<void> {
  const batches: number[][] = [];
  const batcher = new Batcher<number, number>(
    async (items) => {
      batches.push(items);
      return items;
    },
    { lingerMs: 10_000, maxInFlight: 1, maxWeight: 100 },
  );
  for (const n of [1, 2, 3]) {
    const output = batcher.submit(n);
    await endOfTurn();
    expect(batches, `batch ${n} waits for a slot a settled batch still holds`).toHaveLength(n);
    expect(await output).toBe(n);
  }
  // one batch failing frees its slot as well
  const failing = new Batcher<number, number>(
    async (items) => {
      batches.push(items);
      if (items[0] === 4) throw new Error('refused');
      return items;
    },
    { lingerMs: 10_000, maxInFlight: 1, maxWeight: 100 },
  );
  // the expectation holds the rejection from the start: it comes before the turn ends
  const refusal = expect(failing.submit(4)).rejects.toThrow('refused');
  await endOfTurn();
  await refusal;
  const next = failing.submit(5);
  await endOfTurn();
  expect(batches.at(-1), 'a failed batch still holds its slot').toEqual([5]);
  expect(await next).toBe(5);
}

describe('Batcher', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

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
    const { batches, batcher } = echoBatcher<string>({
      lingerMs: 30,
      maxWeight: 5,
      weight: (item) => item.length,
    });
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

  it('a settled batch, done or failed, frees its slot at once: the next goes at the end of its turn', async () => {
    await settledBatchesLeaveTheirSlot();
  });

  it('rejects every item of a batch whose outputs do not match its items one to one', async () => {
    for (const answer of [(items: number[]) => items.slice(1), (items: number[]) => [...items, 0]]) {
      const batcher = new Batcher<number, number>(async (items) => answer(items), {
        lingerMs: 0,
        maxWeight: 10,
      });
      const results = await Promise.allSettled([batcher.submit(1), batcher.submit(2)]);
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      expect((results[1] as PromiseRejectedResult).reason.message).toMatch(
        /batch of 2 items gave \d outputs/,
      );
    }
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

  it('closes at once when the weight reaches maxWeight exactly, and the next batch starts from 0', async () => {
    vi.useFakeTimers();
    const { batches, batcher } = echoBatcher<number>({ lingerMs: 1000, maxWeight: 2 }); // each item weighs 1
    const outputs = [batcher.submit(1), batcher.submit(2)];
    expect(batches).toEqual([[1, 2]]);
    outputs.push(batcher.submit(3));
    await vi.advanceTimersByTimeAsync(999);
    expect(batches).toEqual([[1, 2]]);
    outputs.push(batcher.submit(4));
    expect(batches).toEqual([
      [1, 2],
      [3, 4],
    ]);
    expect(await Promise.all(outputs)).toEqual([1, 2, 3, 4]);
  });

  it('a batch closed by weight cancels its linger: the next batch waits a linger of its own', async () => {
    vi.useFakeTimers();
    const { batches, batcher } = echoBatcher<number>({ lingerMs: 100, maxWeight: 2 });
    const outputs = [batcher.submit(1)];
    await vi.advanceTimersByTimeAsync(50);
    outputs.push(batcher.submit(2), batcher.submit(3)); // [1, 2] by weight; 3 lingers from here
    await vi.advanceTimersByTimeAsync(60);
    expect(batches).toEqual([[1, 2]]);
    await vi.advanceTimersByTimeAsync(40);
    expect(batches).toEqual([[1, 2], [3]]);
    expect(await Promise.all(outputs)).toEqual([1, 2, 3]);
  });

  it('times the linger from the first item of a batch, not from an item of one closed before', async () => {
    vi.useFakeTimers();
    const { batches, batcher } = echoBatcher<number>({ lingerMs: 100, maxWeight: 3 });
    const outputs = [batcher.submit(1)];
    await vi.advanceTimersByTimeAsync(10);
    outputs.push(batcher.submit(2), batcher.submit(3)); // closed by weight at 10
    outputs.push(batcher.submit(4)); // its linger ends at 110, not when 1's would have (100)
    await vi.advanceTimersByTimeAsync(99);
    expect(batches).toEqual([[1, 2, 3]]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([[1, 2, 3], [4]]);
    expect(await Promise.all(outputs)).toEqual([1, 2, 3, 4]);
  });

  it('a batch closed by weight cancels its end-of-turn close: the next one waits for a free slot', async () => {
    const batches: number[][] = [];
    const releases: (() => void)[] = [];
    const batcher = new Batcher<number, number>(
      (items) => {
        batches.push(items);
        return new Promise((resolve) => releases.push(() => resolve(items)));
      },
      { lingerMs: 10_000, maxInFlight: 1, maxWeight: 2 },
    );
    const outputs = [batcher.submit(1), batcher.submit(2)]; // a free slot, then closed by weight
    outputs.push(batcher.submit(3)); // the slot is taken: 3 waits for it
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1, 2]]);
    releases.shift()!();
    await outputs[0];
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([[1, 2], [3]]);
    releases.shift()!();
    expect(await Promise.all(outputs)).toEqual([1, 2, 3]);
  });

  it('a batch settling with nothing open starts no linger: a later item waits a whole linger of its own', async () => {
    vi.useFakeTimers();
    const releases: (() => void)[] = [];
    const batches: string[][] = [];
    const batcher = new Batcher<string, string>(
      (items) => {
        batches.push(items);
        return new Promise((resolve) => releases.push(() => resolve(items)));
      },
      { lingerMs: 100, maxInFlight: 1, maxWeight: 2, weight: (item) => item.length },
    );
    const outputs = [batcher.submit('aa'), batcher.submit('bb')]; // two batches by weight, 2 running
    releases.shift()!(); // 'aa' settles with nothing open; 'bb' still holds the only slot
    await vi.advanceTimersByTimeAsync(50);
    outputs.push(batcher.submit('c')); // no free slot: lingers 100 from here
    await vi.advanceTimersByTimeAsync(99);
    expect(batches).toEqual([['aa'], ['bb']]);
    await vi.advanceTimersByTimeAsync(1);
    expect(batches).toEqual([['aa'], ['bb'], ['c']]);
    releases.shift()!();
    releases.shift()!();
    expect(await Promise.all(outputs)).toEqual(['aa', 'bb', 'c']);
  });

  it('weighs each item with `weight`: one item of the whole weight closes its batch alone', async () => {
    vi.useFakeTimers();
    const { batches, batcher } = echoBatcher<string>({
      lingerMs: 1000,
      maxWeight: 5,
      weight: (item) => item.length,
    });
    const outputs = [batcher.submit('ab'), batcher.submit('cd')];
    expect(batches).toEqual([]);
    outputs.push(batcher.submit('e')); // 2 + 2 + 1 reaches 5
    expect(batches).toEqual([['ab', 'cd', 'e']]);
    outputs.push(batcher.submit('fghij'));
    expect(batches).toEqual([['ab', 'cd', 'e'], ['fghij']]);
    expect(await Promise.all(outputs)).toEqual(['ab', 'cd', 'e', 'fghij']);
  });

  it('with lingerMs 0, closes at the end of the turn, not on a timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] }); // a timer would never fire here
    const { batches, batcher } = echoBatcher<number>({ lingerMs: 0, maxWeight: 10 });
    const outputs = [batcher.submit(1), batcher.submit(2)];
    await endOfTurn();
    expect(batches).toEqual([[1, 2]]);
    expect(await Promise.all(outputs)).toEqual([1, 2]);
  });

  it('closes a batch once per turn: items of the next turn gather together', async () => {
    const { batches, batcher } = echoBatcher<number>({ lingerMs: 0, maxWeight: 10 });
    // 1, 2 and 3 close at the end of this turn; 4 and 5, submitted by callbacks of that same end
    // of turn (queued between them), close together at the end of the next one
    const outputs = [batcher.submit(1)];
    setImmediate(() => outputs.push(batcher.submit(4)));
    outputs.push(batcher.submit(2));
    setImmediate(() => outputs.push(batcher.submit(5)));
    outputs.push(batcher.submit(3));
    await endOfTurn();
    await endOfTurn();
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5],
    ]);
    expect(await Promise.all(outputs)).toEqual([1, 2, 3, 4, 5]);
  });

  /*
   * flush loops until the set of batches in flight is empty. A batch that stayed in it once settled
   * would make it spin on microtasks for ever, starving every timer (the test timeout's too): a run
   * that never ends instead of a failure. So these first make sure a settled batch leaves the set.
   */
  describe('flush', () => {
    beforeAll(async () => {
      await settledBatchesLeaveTheirSlot();
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

    it('runs no empty batch: a flush with nothing open calls nothing', async () => {
      const { batches, batcher } = echoBatcher<number>({ lingerMs: 0, maxWeight: 10 });
      await batcher.flush();
      expect(await batcher.submit(1)).toBe(1);
      await batcher.flush();
      expect(batches).toEqual([[1]]);
    });

    it('flush waits as well for a batch that starts while it waits', async () => {
      const releases = new Map<number, () => void>();
      const batcher = new Batcher<number, number>(
        (items) => new Promise((resolve) => releases.set(items[0]!, () => resolve(items))),
        { lingerMs: 10_000, maxWeight: 1 },
      );
      const outputs = [batcher.submit(1)];
      let flushed = false;
      const flushing = batcher.flush().then(() => {
        flushed = true;
      });
      outputs.push(batcher.submit(2)); // a request arriving during the shutdown's flush
      releases.get(1)!();
      await outputs[0];
      await new Promise((resolve) => setImmediate(resolve));
      expect(flushed).toBe(false);
      releases.get(2)!();
      await flushing;
      expect(await Promise.all(outputs)).toEqual([1, 2]);
    });

    it('flush waits for a batch that starts as the last one running settles, before the flush wakes', async () => {
      const releases = new Map<number, () => void>();
      const batcher = new Batcher<number, number>(
        (items) => new Promise((resolve) => releases.set(items[0]!, () => resolve(items))),
        { lingerMs: 10_000, maxWeight: 1 },
      );
      const outputs = [batcher.submit(1)];
      // Stands for a caller whose follow-up write lands in the microtasks between the last batch's
      // end and the flush waking up: woken first, it starts batch 2 before the flush looks again.
      const running = (batcher as unknown as { running: { idle(): Promise<void> } }).running;
      const followUp = running.idle().then(() => {
        outputs.push(batcher.submit(2));
      });
      let flushed = false;
      const flushing = batcher.flush().then(() => {
        flushed = true;
      });
      releases.get(1)!();
      await followUp;
      await endOfTurn();
      expect(releases.has(2)).toBe(true);
      expect(flushed, 'the flush returned while batch 2 was running').toBe(false);
      releases.get(2)!();
      await flushing;
      expect(await Promise.all(outputs)).toEqual([1, 2]);
    });
  });
});
