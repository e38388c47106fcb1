import { describe, expect, it } from 'vitest';
import type { Queryable } from '../db/index.js';
import { planPage, totalImpliedByPage } from './page-plan.js';
import { sharedCount } from './shared-count.js';

describe('planPage', () => {
  it('reads the first half newest first and the second half from the other end', () => {
    expect(planPage({ limit: 100, offset: 0 }, undefined)).toEqual({
      direction: 'newest-first',
      limit: 100,
      offset: 0,
    });
    expect(planPage({ limit: 100, offset: 100 }, 100_000)).toEqual({
      direction: 'newest-first',
      limit: 100,
      offset: 100,
    });
    // rows 99,900..99,999 newest first are rows 0..99 oldest first
    expect(planPage({ limit: 100, offset: 99_900 }, 100_000)).toEqual({
      direction: 'oldest-first',
      limit: 100,
      offset: 0,
    });
    // a short last page: rows 95..99 of 100 are the 5 oldest
    expect(planPage({ limit: 10, offset: 95 }, 100)).toEqual({
      direction: 'oldest-first',
      limit: 5,
      offset: 0,
    });
    expect(planPage({ limit: 10, offset: 60 }, 100)).toEqual({
      direction: 'oldest-first',
      limit: 10,
      offset: 30,
    });
    expect(planPage({ limit: 10, offset: 45 }, 100)).toEqual({
      direction: 'newest-first',
      limit: 10,
      offset: 45,
    });
    expect(planPage({ limit: 10, offset: 100 }, 100)).toEqual({ direction: 'none' });
    expect(planPage({ limit: 10, offset: 5 }, 0)).toEqual({ direction: 'none' });
  });

  it('never skips more than half the list', () => {
    const total = 1001;
    for (let offset = 0; offset < total; offset += 7) {
      const plan = planPage({ limit: 25, offset }, total);
      if (plan.direction === 'none') throw new Error('unexpected');
      expect(plan.offset).toBeLessThanOrEqual(Math.ceil(total / 2));
      // the same rows either way: newest-first positions [offset, end)
      const end = Math.min(offset + 25, total);
      const rows =
        plan.direction === 'newest-first'
          ? [plan.offset, plan.offset + Math.min(plan.limit, total - plan.offset)]
          : [total - plan.offset - plan.limit, total - plan.offset];
      expect(rows).toEqual([offset, end]);
    }
  });
});

describe('totalImpliedByPage', () => {
  it('knows the total from a last page that is not full, and only then', () => {
    expect(totalImpliedByPage({ limit: 25, offset: 50 }, 3)).toBe(53);
    expect(totalImpliedByPage({ limit: 25, offset: 0 }, 0)).toBe(0);
    expect(totalImpliedByPage({ limit: 25, offset: 0 }, 25)).toBeUndefined();
    expect(totalImpliedByPage({ limit: 25, offset: 50 }, 0)).toBeUndefined();
  });
});

/** A database handle whose count queries finish only when the test says so. */
function controlledDatabase() {
  const pending: { resolve: (total: number) => void }[] = [];
  const db: Queryable = {
    query: (() =>
      new Promise((resolve) => {
        pending.push({ resolve: (total) => resolve({ rows: [{ total }] } as never) });
      })) as Queryable['query'],
  };
  return { db, pending };
}

describe('sharedCount', () => {
  it('lets a caller join a count that started after it began, never one that started before', async () => {
    const { db, pending } = controlledDatabase();
    const before = performance.now();
    const first = sharedCount(db, 'SELECT count(*)', [1], before);
    // began before the running count started: may join it
    const joined = sharedCount(db, 'SELECT count(*)', [1], before);
    expect(pending).toHaveLength(1);
    // began after it started: a count of its own, which could miss its own writes otherwise
    await new Promise((resolve) => setTimeout(resolve, 2));
    const later = sharedCount(db, 'SELECT count(*)', [1], performance.now());
    expect(pending).toHaveLength(2);
    // another list or filter never shares
    sharedCount(db, 'SELECT count(*)', [2], before);
    expect(pending).toHaveLength(3);

    pending[0]!.resolve(10);
    pending[1]!.resolve(11);
    pending[2]!.resolve(99);
    expect(await first).toBe(10);
    expect(await joined).toBe(10);
    expect(await later).toBe(11);
  });

  it('keeps nothing once a count returns, and never shares between database handles', async () => {
    const a = controlledDatabase();
    const b = controlledDatabase();
    const notBefore = performance.now() - 1000;
    const one = sharedCount(a.db, 'q', [], notBefore);
    sharedCount(b.db, 'q', [], notBefore);
    expect(a.pending).toHaveLength(1);
    expect(b.pending).toHaveLength(1);
    a.pending[0]!.resolve(1);
    await one;
    const again = sharedCount(a.db, 'q', [], notBefore);
    expect(a.pending).toHaveLength(2);
    a.pending[1]!.resolve(2);
    expect(await again).toBe(2);
  });
});
