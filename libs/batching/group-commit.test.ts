import { describe, expect, it } from 'vitest';
import { groupCommit } from './group-commit.js';

describe('groupCommit', () => {
  it('runs the calls of one turn together, each caller getting its own output', async () => {
    const runs: number[][] = [];
    const double = groupCommit(
      async (items: number[]) => {
        runs.push(items);
        return items.map((n) => n * 2);
      },
      { lingerMs: 0, maxWeight: 10 },
    );
    expect(await Promise.all([1, 2, 3].map(double))).toEqual([2, 4, 6]);
    expect(runs).toEqual([[1, 2, 3]]);
  });

  it('runs a failed batch again item by item: only the culprit fails', async () => {
    const runs: number[][] = [];
    const checked = groupCommit(
      async (items: number[]) => {
        runs.push(items);
        if (items.includes(13)) throw new Error('13 is refused');
        return items;
      },
      { lingerMs: 0, maxWeight: 10 },
    );
    const outcomes = await Promise.allSettled([12, 13, 14].map(checked));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value : (o.reason as Error).message))).toEqual([
      12,
      '13 is refused',
      14,
    ]);
    expect(runs).toEqual([[12, 13, 14], [12], [13], [14]]);
  });

  it('runs a lone item that fails once, not again on its own', async () => {
    const runs: number[][] = [];
    const checked = groupCommit(
      async (items: number[]) => {
        runs.push(items);
        throw new Error('refused');
      },
      { lingerMs: 0, maxWeight: 10 },
    );
    await expect(checked(13)).rejects.toThrow('refused');
    expect(runs).toEqual([[13]]);
  });
});
