import { describe, expect, it } from 'vitest';
import { groupByBucket, nthDecision } from './bucket-groups.js';

describe('groupByBucket', () => {
  it('groups by bucket, limit and ttl, in first-seen order, keeping each request position', () => {
    const a = { key: 'rl:1', limit: 3, ttlSeconds: 3900 };
    const b = { key: 'rl:2', limit: 3, ttlSeconds: 3900 };
    const aRaised = { ...a, limit: 5 };
    const groups = groupByBucket([a, b, undefined, { ...a }, aRaised, undefined, b]);
    expect(groups).toEqual([
      { bucket: a, members: [0, 3] },
      { bucket: b, members: [1, 6] },
      { bucket: undefined, members: [2, 5] },
      { bucket: aRaised, members: [4] },
    ]);
  });
});

describe('groupByBucket, one request after another', () => {
  it('keeps a bucket of another limit or ttl apart even when it directly follows', () => {
    const a = { key: 'rl:1', limit: 3, ttlSeconds: 3900 };
    const aLonger = { ...a, ttlSeconds: 7800 };
    const aRaised = { ...a, limit: 4 };
    const other = { key: 'rl:2', limit: 3, ttlSeconds: 3900 };
    expect(groupByBucket([a, aLonger, aLonger, aRaised, other, { ...other }])).toEqual([
      { bucket: a, members: [0] },
      { bucket: aLonger, members: [1, 2] },
      { bucket: aRaised, members: [3] },
      { bucket: other, members: [4, 5] },
    ]);
  });
});

describe('nthDecision', () => {
  // What consuming one by one gives: count 8 before, limit 10, four requests.
  it('allows and counts the first requests up to the limit, then refuses without counting', () => {
    expect([0, 1, 2, 3].map((nth) => nthDecision(8, 2, nth))).toEqual([
      { count: 9, allowed: true },
      { count: 10, allowed: true },
      { count: 10, allowed: false },
      { count: 10, allowed: false },
    ]);
  });

  it('reports the count found when the bucket was already over a (lowered) limit', () => {
    expect(nthDecision(12, 0, 0)).toEqual({ count: 12, allowed: false });
  });
});
