import { describe, expect, it } from 'vitest';
import { calls, seats } from '../item-set/item-set-fixtures.js';
import type { BillableItem } from '../pricing/index.js';
import { atBilledTerms, billedTermsOf, itemForPeriod, usageWindow } from './billable-items.js';

/*
 * What an item bills in a period [start, end) (docs/decisions.md, "Subscription changes"): an item
 * removed mid-period is billed for that period, never after; one added is billed from its start;
 * a licensed item is charged at the terms the period began with (its base).
 */

const april = { start: new Date('2026-04-01T00:00:00Z'), end: new Date('2026-05-01T00:00:00Z') };
const ms = (date: Date, delta: number) => new Date(date.getTime() + delta);

/** 5 seats at 12.50 (item-set-fixtures' licensed item). */
const seat = (overrides: Partial<BillableItem> = {}): BillableItem =>
  seats(5, { unit_price: '12.50000000', ...overrides });

describe('itemForPeriod', () => {
  it('an item removed at the period start is not billed in it; removed a moment later, it is', () => {
    expect(itemForPeriod(seat({ removed_at: april.start }), april)).toBeUndefined();
    expect(itemForPeriod(seat({ removed_at: ms(april.start, -1) }), april)).toBeUndefined();
    expect(itemForPeriod(seat({ removed_at: ms(april.start, 1) }), april)?.quantity).toBe(5);
    expect(itemForPeriod(seat({ removed_at: april.end }), april)?.quantity).toBe(5);
  });

  it('an item started at the period end is not billed in it; started a moment before, it is', () => {
    expect(itemForPeriod(seat({ started_at: april.end }), april)).toBeUndefined();
    expect(itemForPeriod(seat({ started_at: ms(april.end, 1) }), april)).toBeUndefined();
    const meter = seat({ usage_type: 'metered', pricing_type: 'usage', started_at: ms(april.end, -1) });
    expect(itemForPeriod(meter, april)).toEqual(meter);
    expect(itemForPeriod(seat({ started_at: april.start }), april)?.quantity).toBe(5);
  });

  it("charges the terms the period began with, only when the base is that period's", () => {
    const base = { period_start: april.start, quantity: 2, unit_price: '10.00000000', included_units: '0' };
    expect(itemForPeriod(seat({ base }), april)).toMatchObject({ quantity: 2, unit_price: '10.00000000' });
    // a base of the previous period is no term of this one
    const march = { ...base, period_start: new Date('2026-03-01T00:00:00Z') };
    expect(itemForPeriod(seat({ base: march }), april)).toMatchObject({
      quantity: 5,
      unit_price: '12.50000000',
    });
  });

  it('a licensed item added in the period (base quantity 0) is billed by its proration line only', () => {
    const added = { period_start: april.start, quantity: 0, unit_price: '12.50000000', included_units: '0' };
    expect(itemForPeriod(seat({ started_at: ms(april.start, 1000), base: added }), april)).toBeUndefined();
    // a metered one is billed for its usage
    const meter = seat({ usage_type: 'metered', pricing_type: 'usage', quantity: 0 });
    expect(
      itemForPeriod(
        { ...meter, started_at: ms(april.start, 1000), base: { ...added, included_units: '50' } },
        april,
      ),
    ).toMatchObject({ included_units: '50' });
  });
});

describe('usageWindow', () => {
  it('is the part of the period the item was on, clamped to the period', () => {
    const start = new Date('2026-04-11T00:00:00Z');
    const end = new Date('2026-04-21T00:00:00Z');
    expect(usageWindow(seat({ started_at: start, removed_at: end }), april)).toEqual({ start, end });
    expect(usageWindow(seat(), april)).toEqual(april);
    expect(
      usageWindow(
        seat({ started_at: new Date('2026-03-15T00:00:00Z'), removed_at: new Date('2026-05-15T00:00:00Z') }),
        april,
      ),
    ).toEqual(april);
  });
});

describe('billedTermsOf', () => {
  it("keeps each billed item's terms of the period by its id, leaving out an item the period does not bill", () => {
    const base = { period_start: april.start, quantity: 2, unit_price: '10.00000000', included_units: '0' };
    const terms = billedTermsOf(
      [
        // changed in April: billed at the terms April began with
        seat({ subscription_item_id: 7, base }),
        // removed before April: not billed
        seat({ subscription_item_id: 9, removed_at: ms(april.start, -1) }),
        // a meter at its own terms
        calls('100.00000000', { subscription_item_id: 8, quantity: 1 }),
      ],
      april,
    );
    expect(terms).toEqual({
      7: { quantity: 2, unit_price: '10.00000000', included_units: '0' },
      8: { quantity: 1, unit_price: '0.01000000', included_units: '100.00000000' },
    });
  });
});

describe('atBilledTerms', () => {
  it('bills each item again at the terms its period billed, its base dropped, and leaves out an item without terms', () => {
    const base = { period_start: april.start, quantity: 2, unit_price: '10.00000000', included_units: '0' };
    const items = [seat({ subscription_item_id: 7, base }), seat({ subscription_item_id: 9, quantity: 3 })];
    const again = atBilledTerms(items, {
      7: { quantity: 4, unit_price: '11.00000000', included_units: '0' },
    });
    expect(again).toEqual([
      { ...items[0], quantity: 4, unit_price: '11.00000000', included_units: '0', base: null },
    ]);
    // the terms are what the period bills: billed again, they bill it at them, whatever the base says
    expect(itemForPeriod(again[0]!, april)).toMatchObject({ quantity: 4, unit_price: '11.00000000' });
  });

  it('without terms (an invoice made before they were kept) bills the items as they are', () => {
    const items = [seat({ subscription_item_id: 7 }), seat({ subscription_item_id: 9, quantity: 3 })];
    expect(atBilledTerms(items, null)).toEqual(items);
    expect(atBilledTerms(items, undefined)).toEqual(items);
  });
});
