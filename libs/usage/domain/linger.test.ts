import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { ThinTurnLinger } from './linger.js';

const OPTIONS = { maxMs: 1, thinEvents: 16 };

/** Records when each held request is let go, in the order they go. */
function recorder() {
  const gone: string[] = [];
  const go = (linger: ThinTurnLinger, name: string, events = 1): Promise<void> => {
    const held = linger.hold(events);
    if (!held) {
      gone.push(name);
      return Promise.resolve();
    }
    return held.then(() => {
      gone.push(name);
    });
  };
  return { gone, go };
}

describe('ThinTurnLinger', () => {
  it('never holds a lone client', () => {
    const linger = new ThinTurnLinger(OPTIONS);
    linger.enter();
    expect(linger.hold(1)).toBeUndefined();
    linger.leave();
    linger.enter();
    expect(linger.hold(1)).toBeUndefined();
  });

  it('holds the first of two concurrent clients until the second comes, then lets both go together', async () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 16 });
    const { gone, go } = recorder();
    linger.enter();
    linger.enter();
    const first = go(linger, 'a');
    await sleep(20);
    // still held, well past a turn: it waits for the second request, not for the end of the turn
    expect(gone).toEqual([]);
    const second = go(linger, 'b');
    await Promise.all([first, second]);
    expect(gone).toEqual(['a', 'b']);
  });

  it('lets a lone event go within its bound when the other client went away, then stops holding', async () => {
    const linger = new ThinTurnLinger({ maxMs: 5, thinEvents: 16 });
    linger.enter();
    linger.enter();
    linger.leave();
    linger.leave();
    // peak 2 from before: the next lone request is held, for the bound at most
    linger.enter();
    const started = performance.now();
    const held = linger.hold(1);
    expect(held).toBeDefined();
    await held;
    const waited = performance.now() - started;
    expect(waited).toBeGreaterThanOrEqual(4);
    expect(waited).toBeLessThan(100);
    linger.leave();
    // the bound lowered the target to the one client that came: the next is not held
    linger.enter();
    expect(linger.target).toBe(1);
    expect(linger.hold(1)).toBeUndefined();
  });

  it('does not hold a group that is not thin', async () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 16 });
    linger.enter();
    linger.enter();
    expect(linger.hold(16)).toBeUndefined();
    const { gone, go } = recorder();
    const small = go(linger, 'small', 10);
    expect(gone).toEqual([]);
    // 10 + 6 events reach the thin bound: both go at once, before the second client would come
    const more = go(linger, 'more', 6);
    await Promise.all([small, more]);
    expect(gone).toEqual(['small', 'more']);
  });

  it('lets a group go the moment it holds thinEvents events, and starts the next group from none', async () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 4 });
    // eight clients seen, two recording now (the others' requests are not on their way)
    for (let i = 0; i < 8; i++) linger.enter();
    for (let i = 0; i < 6; i++) linger.leave();
    const { gone, go } = recorder();
    go(linger, 'a', 2);
    // 2 + 2 = exactly thinEvents: both go now, not when the other six clients come nor at maxMs
    go(linger, 'b', 2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(gone).toEqual(['a', 'b']);
    // a later turn: the events of the group that went count no more
    const third = go(linger, 'c', 2);
    await new Promise((resolve) => setImmediate(resolve));
    expect(gone).toEqual(['a', 'b']);
    await Promise.all([third, go(linger, 'd', 2)]);
    expect(gone).toEqual(['a', 'b', 'c', 'd']);
  });

  it('takes a request that is not thin into the group already held, which then goes with it', async () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 16 });
    for (let i = 0; i < 3; i++) linger.enter();
    const { gone, go } = recorder();
    const small = go(linger, 'small', 1);
    expect(gone).toEqual([]);
    const big = linger.hold(16);
    expect(big).toBeDefined();
    await Promise.all([small, big]);
    expect(gone).toEqual(['small']);
  });

  it('keeps the concurrency seen once a group went whole: its bound no longer runs', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const linger = new ThinTurnLinger({ maxMs: 5, thinEvents: 16 });
      for (let i = 0; i < 3; i++) linger.enter();
      const { gone, go } = recorder();
      const group = [go(linger, 'a'), go(linger, 'b'), go(linger, 'c')];
      await Promise.all(group);
      expect(gone).toEqual(['a', 'b', 'c']);
      // the bound of the group's first request would lower the target if it still ran
      vi.advanceTimersByTime(50);
      expect(linger.target).toBe(3);
    } finally {
      vi.useRealTimers();
    }
  });

  it('holds up to the concurrency seen: eight clients go as one group', async () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 16 });
    for (let i = 0; i < 8; i++) linger.enter();
    const { gone, go } = recorder();
    const requests: Promise<void>[] = [];
    for (let i = 0; i < 7; i++) requests.push(go(linger, String(i)));
    await sleep(10);
    expect(gone).toEqual([]);
    requests.push(go(linger, '7'));
    await Promise.all(requests);
    expect(gone).toHaveLength(8);
  });

  it('does not split a turn: a request in the turn a group went joins it, the next turn holds again', async () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 16 });
    for (let i = 0; i < 3; i++) linger.enter();
    const { gone, go } = recorder();
    const group = [go(linger, 'a'), go(linger, 'b'), go(linger, 'c')];
    // the group went (3 of 3): a fourth client's request in this same turn goes straight on
    linger.enter();
    expect(linger.hold(1)).toBeUndefined();
    await Promise.all(group);
    expect(gone).toEqual(['a', 'b', 'c']);
    await new Promise((resolve) => setImmediate(resolve));
    const next = linger.hold(1);
    expect(next).toBeDefined();
    for (let i = 0; i < 3; i++) linger.hold(1);
    await next;
  });

  it('holds nothing while a busy turn has many requests on their way already', () => {
    const linger = new ThinTurnLinger({ maxMs: 1000, thinEvents: 16 });
    for (let i = 0; i < 17; i++) linger.enter();
    // 16 others are further on: this turn is not thin, holding would only split it
    expect(linger.hold(1)).toBeUndefined();
    linger.leave();
    expect(linger.hold(1)).toBeDefined();
  });
});
