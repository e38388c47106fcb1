import { describe, expect, it } from 'vitest';
import { paginationOf, paginationQuery } from './pagination.js';

describe('paginationQuery', () => {
  it('takes both ends of each range: limit 1 and 100, offset 0; one past either end is refused', () => {
    expect(paginationQuery.parse({ limit: '1', offset: '0' })).toEqual({ limit: 1, offset: 0 });
    expect(paginationQuery.parse({ limit: '100' })).toEqual({ limit: 100, offset: 0 });
    for (const query of [{ limit: '0' }, { limit: '101' }, { offset: '-1' }]) {
      expect(paginationQuery.safeParse(query).success, JSON.stringify(query)).toBe(false);
    }
  });

  it('has more exactly while offset + limit is short of the total', () => {
    expect(paginationOf({ limit: 10, offset: 90 }, 100).has_more).toBe(false);
    expect(paginationOf({ limit: 10, offset: 89 }, 100).has_more).toBe(true);
  });
});
