import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { PROBE_EVERY, ThinTurnLinger } from './linger.js';

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
    expect(linger.concurrency).toBe(1);
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
      expect(linger.concurrency).toBe(3);
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

  describe('clients out of step', () => {
    /** A turn: promises resolved in this one have run their callbacks. */
    const turn = () => new Promise((resolve) => setImmediate(resolve));

    /**
     * Four clients answered as one group; then two of them come back while the other two are
     * still on their way, and their group waits out the bound for the two.
     */
    async function splitInTwo() {
      const linger = new ThinTurnLinger({ maxMs: 5, thinEvents: 16 });
      const { gone, go } = recorder();
      for (let i = 0; i < 4; i++) linger.enter();
      await Promise.all(['a', 'b', 'c', 'd'].map((name) => go(linger, name)));
      await turn();
      // a and b are answered and send again; c and d are still with the store and the log
      linger.leave();
      linger.leave();
      linger.enter();
      linger.enter();
      const early = [go(linger, 'a2'), go(linger, 'b2')];
      await turn();
      expect(gone).toEqual(['a', 'b', 'c', 'd']);
      vi.advanceTimersByTime(5);
      await Promise.all(early);
      expect(gone).toEqual(['a', 'b', 'c', 'd', 'a2', 'b2']);
      await turn();
      return { linger, gone, go };
    }

    it('stops waiting for clients a group behind once a group waited the bound for them', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const { linger, gone, go } = await splitInTwo();
        // the two that were on their way did not go away: the concurrency stays four
        expect(linger.concurrency).toBe(4);
        expect(linger.waitsForEveryClient).toBe(false);
        // c and d come back while a2 and b2 are on their way: their group goes when both are
        // there, without the bound
        linger.leave();
        linger.leave();
        linger.enter();
        const c2 = go(linger, 'c2');
        await turn();
        expect(gone).not.toContain('c2');
        linger.enter();
        const d2 = go(linger, 'd2');
        await Promise.all([c2, d2]);
        expect(gone.slice(-2)).toEqual(['c2', 'd2']);
      } finally {
        vi.useRealTimers();
      }
    });

    it(`waits for every client again after ${PROBE_EVERY} groups out of step`, async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const { linger, go } = await splitInTwo();
        // the two halves take turns, each group going as soon as its two are there
        for (let group = 0; group < PROBE_EVERY - 1; group++) {
          expect(linger.waitsForEveryClient).toBe(false);
          linger.leave();
          linger.leave();
          linger.enter();
          const x = go(linger, 'x');
          linger.enter();
          await Promise.all([x, go(linger, 'y')]);
          await turn();
        }
        expect(linger.waitsForEveryClient).toBe(true);
        // this half now waits for the other half to come round again
        const { gone, go: goNow } = recorder();
        const comeBack = (name: string) => {
          linger.enter();
          return goNow(linger, name);
        };
        linger.leave();
        linger.leave();
        const half = [comeBack('p'), comeBack('q')];
        await turn();
        expect(gone).toEqual([]);
        linger.leave();
        linger.leave();
        const whole = [...half, comeBack('r'), comeBack('s')];
        await Promise.all(whole);
        expect(gone).toEqual(['p', 'q', 'r', 's']);
        // gathered whole: it keeps waiting for every client
        expect(linger.waitsForEveryClient).toBe(true);
      } finally {
        vi.useRealTimers();
      }
    });

    it('lets two clients a step apart go one by one, and tries to gather them again later', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const linger = new ThinTurnLinger({ maxMs: 5, thinEvents: 16 });
        // two clients go together once
        linger.enter();
        linger.enter();
        await Promise.all([linger.hold(1), linger.hold(1)]);
        await turn();
        // one is answered and sends again while the other is still on its way: it waits the
        // bound for the other, in vain
        linger.leave();
        linger.enter();
        const waiting = linger.hold(1);
        expect(waiting).toBeDefined();
        vi.advanceTimersByTime(5);
        await waiting;
        await turn();
        expect(linger.concurrency).toBe(2);
        // from now on each goes alone while the other is on its way: a request, then its answer
        for (let request = 1; request < PROBE_EVERY; request++) {
          linger.leave();
          linger.enter();
          expect(linger.hold(1)).toBeUndefined();
        }
        // the probe: the next one waits for the other again
        linger.leave();
        linger.enter();
        expect(linger.hold(1)).toBeDefined();
      } finally {
        vi.useRealTimers();
      }
    });

    it('waits for every client again as soon as one group holds them all', async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      try {
        const { linger } = await splitInTwo();
        // all four are answered, then all four send again: nobody is on the way, so the group waits
        // for all four and goes whole
        linger.leave();
        linger.leave();
        linger.leave();
        linger.leave();
        const { gone, go: goNow } = recorder();
        const all = ['e', 'f', 'g', 'h'].map((name) => {
          linger.enter();
          return goNow(linger, name);
        });
        await Promise.all(all);
        expect(gone).toEqual(['e', 'f', 'g', 'h']);
        expect(linger.waitsForEveryClient).toBe(true);
      } finally {
        vi.useRealTimers();
      }
    });
  });
});
