import { describe, expect, it } from 'vitest';
import { partitionOfKey } from './partitions.js';

describe('partitionOfKey', () => {
  it('routes a key to one stable partition, and keys over every partition', () => {
    expect(partitionOfKey('t', 'a', 6)).toBe(partitionOfKey('other-topic', 'a', 6));
    const spread = new Set(Array.from({ length: 200 }, (_, i) => partitionOfKey('t', `1:${i}`, 6)));
    expect([...spread].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    for (let i = 0; i < 50; i++) expect(partitionOfKey('t', `7:${i}`, 1)).toBe(0);
  });
});
