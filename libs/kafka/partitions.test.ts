import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { partitionOfKey } from './partitions.js';

describe('partitionOfKey', () => {
  it('routes a key to one stable partition, and keys over every partition', () => {
    expect(partitionOfKey('t', 'a', 6)).toBe(partitionOfKey('other-topic', 'a', 6));
    const spread = new Set(Array.from({ length: 200 }, (_, i) => partitionOfKey('t', `1:${i}`, 6)));
    expect([...spread].sort()).toEqual([0, 1, 2, 3, 4, 5]);
    for (let i = 0; i < 50; i++) expect(partitionOfKey('t', `7:${i}`, 1)).toBe(0);
  });

  it('remembers its answers apart for each partition count', () => {
    const kafkajs = Partitioners.DefaultPartitioner();
    const metadataOf = (count: number) =>
      Array.from({ length: count }, (_, partitionId) => ({ partitionId }) as PartitionMetadata);
    for (const count of [12, 5, 1, 12, 5]) {
      for (let i = 0; i < 50; i++) {
        const key = `remembered:${i}`;
        const expected = kafkajs({
          topic: 't',
          partitionMetadata: metadataOf(count),
          message: { key, value: null },
        });
        expect(partitionOfKey('t', key, count), `${key} of ${count}`).toBe(expected);
      }
    }
  });

  it('answers as kafkajs routes a keyed message, from memory too', () => {
    const kafkajs = Partitioners.DefaultPartitioner();
    const partitionMetadata = Array.from(
      { length: 12 },
      (_, partitionId) => ({ partitionId }) as PartitionMetadata,
    );
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 300; i++) {
        const key = `${i % 7}:${i}`;
        const expected = kafkajs({ topic: 't', partitionMetadata, message: { key, value: null } });
        expect(partitionOfKey('t', key, 12)).toBe(expected);
      }
    }
  });
});
