import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import type { SubscriptionStatus } from '../../schemas/index.js';
import { ANALYTICS, calls, catalogOf, MARCH, MID_MARCH, seats } from './item-set-fixtures.js';
import { planChange } from './plan-change.js';

/*
 * A change asked for now is prorated only while the running period is billed: a trial, a
 * subscription not started yet and a paused one bill nothing of it, so their new items simply
 * replace the old (docs/architecture.md, "A subscription change's way").
 */

const catalog = catalogOf([ANALYTICS]);

function changeNow(status: SubscriptionStatus, items = [seats(2)]) {
  return planChange(
    { ...MARCH, status },
    { items, catalog },
    { items: [{ id: 7, quantity: 5 }], effective: 'now', proration: 'prorate' },
    MID_MARCH,
  );
}

describe('planChange', () => {
  it('prorates a change of an active subscription', () => {
    const planned = changeNow('active');
    if (planned.effective !== 'now') throw new Error('a change for now');
    // 16 d of 31 left: 20.00 -> 50.00
    expect(planned.plan.proration_lines.map((line) => line.amount)).toEqual(['-10.32000000', '25.81000000']);
  });

  it('replaces the items of a trialing, pending or paused subscription without proration or base', () => {
    for (const status of ['trialing', 'pending', 'paused'] as const) {
      const planned = changeNow(status);
      if (planned.effective !== 'now') throw new Error('a change for now');
      expect(planned.plan.proration_lines, status).toEqual([]);
      expect(planned.plan.updates, status).toEqual([
        expect.objectContaining({ id: 7, quantity: 5, base: null }),
      ]);
    }
  });

  it('answers 404 for an item an earlier change of the period removed', () => {
    const removed = calls('0.00000000', { removed_at: new Date('2026-03-05T00:00:00Z') });
    let error: unknown;
    try {
      planChange(
        { ...MARCH, status: 'active' },
        { items: [seats(2), removed], catalog },
        { items: [{ id: 7 }, { id: 8 }], effective: 'now', proration: 'prorate' },
        MID_MARCH,
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(404);
  });

  it('checks a set for the period end at the door, as the billing run will apply it', () => {
    const request = {
      items: [{ id: 7 }, { product_id: ANALYTICS.id, quantity: 60_000_000_000 }],
      effective: 'period_end',
      proration: 'prorate',
    } as const;
    let error: unknown;
    try {
      planChange({ ...MARCH, status: 'active' }, { items: [seats(2)], catalog }, request, MID_MARCH);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).details?.map((detail) => detail.field)).toEqual(['items.1.quantity']);
    const fits = planChange(
      { ...MARCH, status: 'active' },
      { items: [seats(2)], catalog },
      { ...request, items: [{ id: 7 }, { product_id: ANALYTICS.id, quantity: 3 }] },
      MID_MARCH,
    );
    expect(fits).toMatchObject({ effective: 'period_end', effectiveAt: MARCH.current_period_end });
  });
});
