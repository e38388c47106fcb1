import { describe, expect, it } from 'vitest';
import { InOrderQueue } from './direct-producer.js';

describe('InOrderQueue', () => {
  it('gives items back in the order pushed, however pushes and shifts interleave', () => {
    const queue = new InOrderQueue<number>();
    const taken: number[] = [];
    let next = 0;
    // always a few in flight, never empty for long: the array must start over on its own
    for (let round = 0; round < 5000; round++) {
      queue.push(next++);
      queue.push(next++);
      taken.push(queue.shift()!);
      if (round % 7 === 0) taken.push(queue.shift()!);
    }
    while (queue.size) taken.push(queue.shift()!);
    expect(taken).toEqual(Array.from({ length: next }, (_, i) => i));
    expect(queue.shift()).toBeUndefined();
    expect(queue.first).toBeUndefined();
  });

  it('keeps what waits when it starts over, and holds no taken item', () => {
    const queue = new InOrderQueue<{ n: number }>();
    for (let n = 0; n < 3000; n++) queue.push({ n });
    for (let n = 0; n < 2500; n++) expect(queue.shift()).toEqual({ n });
    expect(queue.size).toBe(500);
    expect(queue.first).toEqual({ n: 2500 });
    // the slots taken are not held: only the 500 waiting items are left in the array
    const held = (queue as unknown as { items: unknown[] }).items.filter((item) => item !== undefined);
    expect(held).toHaveLength(500);
    expect(queue.takeAll().map((item) => item.n)).toEqual(Array.from({ length: 500 }, (_, i) => 2500 + i));
    expect(queue.size).toBe(0);
  });

  it('keeps its array bounded while it never empties: a steady flow starts it over on its own', () => {
    const queue = new InOrderQueue<number>();
    const held = () => (queue as unknown as { items: unknown[] }).items.length;
    let next = 0;
    let expected = 0;
    for (let i = 0; i < 3; i++) queue.push(next++);
    let longest = 0;
    // three requests always in flight: the queue is never empty, so only compaction can shrink it
    for (let round = 0; round < 50_000; round++) {
      queue.push(next++);
      expect(queue.shift()).toBe(expected++);
      longest = Math.max(longest, held());
    }
    expect(queue.size).toBe(3);
    expect(longest).toBeLessThanOrEqual(2 * 1024 + 3);
  });

  it('starts its array over when its last item is taken', () => {
    const queue = new InOrderQueue<number>();
    const held = () => (queue as unknown as { items: unknown[] }).items.length;
    for (let n = 0; n < 3; n++) queue.push(n);
    queue.shift();
    queue.shift();
    expect(held()).toBe(3);
    queue.shift();
    expect(held()).toBe(0);
    expect(queue.shift()).toBeUndefined();
    queue.push(3);
    expect(held()).toBe(1);
    expect(queue.first).toBe(3);
  });

  it('copies what waits to a new array at 1024 slots taken, not one before', () => {
    const queue = new InOrderQueue<number>();
    const held = () => (queue as unknown as { items: unknown[] }).items.length;
    for (let n = 0; n < 1500; n++) queue.push(n);
    for (let n = 0; n < 1023; n++) queue.shift();
    expect(held()).toBe(1500);
    queue.shift();
    expect(held()).toBe(476);
    expect(queue.first).toBe(1024);
  });

  it('copies what waits to a new array once the taken slots are half of it, not one before', () => {
    const queue = new InOrderQueue<number>();
    const held = () => (queue as unknown as { items: unknown[] }).items.length;
    for (let n = 0; n < 3000; n++) queue.push(n);
    for (let n = 0; n < 1499; n++) queue.shift();
    expect(held()).toBe(3000);
    queue.shift();
    expect(held()).toBe(1500);
    expect(queue.first).toBe(1500);
    expect(queue.size).toBe(1500);
  });
});
