import { describe, expect, it } from 'vitest';
import { routeOf } from './direct-producer.js';

const brokers = [
  { nodeId: 0, host: '10.0.0.1', port: 9092 },
  { nodeId: 1, host: '10.0.0.2', port: 9093 },
];

describe('routeOf', () => {
  it('keeps a partition led by node 0, the first id a real cluster gives', () => {
    const route = routeOf([{ partitionId: 0, leader: 0 }], brokers)!;
    expect(route.partitions).toEqual([0]);
    expect(route.leaders.get(0)).toBe(0);
    expect(route.brokers.get(0)).toEqual({ host: '10.0.0.1', port: 9092 });
  });

  it('leaves out a partition without a leader (-1) and orders the rest by partition id', () => {
    const route = routeOf(
      [
        { partitionId: 2, leader: 1 },
        { partitionId: 1, leader: -1 },
        { partitionId: 0, leader: 0 },
      ],
      brokers,
    )!;
    expect(route.partitions).toEqual([0, 2]);
    expect([...route.leaders]).toEqual([
      [2, 1],
      [0, 0],
    ]);
    expect(route.brokers.get(1)).toEqual({ host: '10.0.0.2', port: 9093 });
  });

  it('is no route when no partition has a leader, or the topic has none', () => {
    expect(routeOf([{ partitionId: 0, leader: -1 }], brokers)).toBeUndefined();
    expect(routeOf([], brokers)).toBeUndefined();
  });
});
