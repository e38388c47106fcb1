import { describe, expect, it } from 'vitest';
import { LatencyTimeline } from './support.js';

/** The per-second timeline the load reports give (bench/entitlements): which second a tail is in. */
describe('LatencyTimeline', () => {
  it('puts each request in the second it was sent in, whenever it was answered', () => {
    const timeline = new LatencyTimeline();
    for (let i = 0; i < 100; i++) timeline.add(10 + i, 1); // second 0: 100 requests at 1 ms
    timeline.add(999, 40); // sent at the end of second 0, answered in second 1
    for (let i = 0; i < 100; i++) timeline.add(2000 + i, 2); // second 2; second 1 had nothing
    const [first, second, third] = timeline.summary();
    expect(first).toEqual({ second: 0, requests: 101, p50Ms: 1, p99Ms: 1, maxMs: 40 });
    expect(second).toEqual({ second: 1, requests: 0, p50Ms: 0, p99Ms: 0, maxMs: 0 });
    expect(third).toEqual({ second: 2, requests: 100, p50Ms: 2, p99Ms: 2, maxMs: 2 });
  });

  it('shows a bad second apart from the good ones (nearest-rank p99 of that second alone)', () => {
    const timeline = new LatencyTimeline();
    for (let i = 0; i < 1000; i++) timeline.add(i, 1);
    for (let i = 0; i < 1000; i++) timeline.add(1000 + i, i < 20 ? 30 : 1);
    expect(timeline.summary().map((s) => s.p99Ms)).toEqual([1, 30]);
  });
});
