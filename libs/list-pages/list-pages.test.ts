import { describe, expect, it } from 'vitest';
import { orderBy, planPage, totalImpliedByPage } from './page-plan.js';

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

  it('reads a page at its own offset, newest first, when the total is not known', () => {
    expect(planPage({ limit: 10, offset: 30 }, undefined)).toEqual({
      direction: 'newest-first',
      limit: 10,
      offset: 30,
    });
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

describe('orderBy', () => {
  it("sorts by created_at, or the list's own instant, then id, in the plan's direction", () => {
    const newest = { direction: 'newest-first', limit: 10, offset: 0 } as const;
    const oldest = { direction: 'oldest-first', limit: 10, offset: 0 } as const;
    expect(orderBy(newest, 'c')).toBe('c.created_at DESC, c.id DESC');
    expect(orderBy(oldest)).toBe('created_at ASC, id ASC');
    expect(orderBy(newest, 'u', 'occurred_at')).toBe('u.occurred_at DESC, u.id DESC');
    expect(orderBy(oldest, '', 'occurred_at')).toBe('occurred_at ASC, id ASC');
  });
});
