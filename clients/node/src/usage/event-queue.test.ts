import { describe, expect, it } from 'vitest';
import { EventQueue } from './event-queue.js';

const item = (id: number, bytes = 10) => ({ id, bytes });
const ids = (items: { id: number }[]) => items.map((i) => i.id);

describe('EventQueue', () => {
  it('takes the oldest items up to a count', () => {
    const queue = new EventQueue<{ id: number; bytes: number }>();
    for (let i = 0; i < 5; i++) queue.push(item(i));
    expect(ids(queue.take(3, 1000))).toEqual([0, 1, 2]);
    expect(queue.length).toBe(2);
    expect(queue.bytes).toBe(20);
    expect(ids(queue.take(3, 1000))).toEqual([3, 4]);
    expect(queue.take(3, 1000)).toEqual([]);
  });

  it('stops a batch before the byte bound, but always takes the first item', () => {
    const queue = new EventQueue<{ id: number; bytes: number }>();
    for (const i of [item(0, 40), item(1, 40), item(2, 40), item(3, 500)]) queue.push(i);
    expect(ids(queue.take(10, 100))).toEqual([0, 1]);
    expect(ids(queue.take(10, 100))).toEqual([2]);
    // one item over the bound still goes, alone
    expect(ids(queue.take(10, 100))).toEqual([3]);
  });

  it('puts a batch back before everything queued, in its order', () => {
    const queue = new EventQueue<{ id: number; bytes: number }>();
    for (let i = 0; i < 6; i++) queue.push(item(i));
    const batch = queue.take(4, 1000);
    queue.push(item(6));
    queue.putFront(batch);
    expect(queue.bytes).toBe(70);
    expect(ids(queue.drain())).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // where the head has no room left in front of it
    queue.push(item(7));
    queue.putFront([item(8), item(9)]);
    expect(ids(queue.drain())).toEqual([8, 9, 7]);
  });

  it('counts no bytes once drained, only those pushed after', () => {
    const queue = new EventQueue<{ id: number; bytes: number }>();
    for (let i = 0; i < 3; i++) queue.push(item(i, 25));
    queue.take(1, 1000);
    expect(ids(queue.drain())).toEqual([1, 2]);
    expect(queue.length).toBe(0);
    expect(queue.bytes).toBe(0);
    queue.push(item(3, 7));
    expect(queue.bytes).toBe(7);
    expect(ids(queue.take(10, 7))).toEqual([3]);
    expect(queue.bytes).toBe(0);
  });

  it('keeps every item, in order, when a take moves its head past half of a long array', () => {
    const queue = new EventQueue<{ id: number; bytes: number }>();
    for (let i = 0; i < 3000; i++) queue.push(item(i, 1));
    expect(queue.take(1100, 10_000)).toHaveLength(1100);
    // 1,600 of 3,000 read: the array is compacted, the 1,400 left stay
    expect(queue.take(500, 10_000)).toHaveLength(500);
    expect(queue.length).toBe(1400);
    expect(ids(queue.drain())).toEqual(Array.from({ length: 1400 }, (_, n) => 1600 + n));
  });

  it('behaves as a plain array under a long random mix of operations (compaction included)', () => {
    const queue = new EventQueue<{ id: number; bytes: number }>();
    let model: { id: number; bytes: number }[] = [];
    let next = 0;
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let step = 0; step < 20_000; step++) {
      const r = random();
      if (r < 0.6) {
        const it = item(next++, 1 + Math.floor(random() * 20));
        queue.push(it);
        model.push(it);
      } else if (r < 0.9) {
        const count = 1 + Math.floor(random() * 50);
        const bytes = 1 + Math.floor(random() * 300);
        const taken = queue.take(count, bytes);
        let end = 0;
        let sum = 0;
        while (end < Math.min(count, model.length)) {
          if (end > 0 && sum + model[end]!.bytes > bytes) break;
          sum += model[end]!.bytes;
          end++;
        }
        expect(ids(taken)).toEqual(ids(model.slice(0, end)));
        model = model.slice(end);
        if (random() < 0.3) {
          queue.putFront(taken);
          model = [...taken, ...model];
        }
      } else {
        expect(queue.length).toBe(model.length);
        expect(queue.bytes).toBe(model.reduce((sum, i) => sum + i.bytes, 0));
      }
    }
    expect(ids(queue.drain())).toEqual(ids(model));
  });
});
