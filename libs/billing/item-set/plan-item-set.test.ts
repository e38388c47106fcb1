import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import { UnbillableError } from '../invoices/index.js';
import type { BillableItem } from '../pricing/index.js';
import type { ChangeCatalog, ChangeMode, ResolvedEntry } from './item-set.js';
import {
  ANALYTICS,
  calls,
  catalogOf,
  MARCH,
  MID_MARCH,
  ONBOARDING,
  STORAGE,
  seats,
} from './item-set-fixtures.js';
import { changesNothing, endItemsAt, type ItemSetPlan, planItemSet } from './plan-item-set.js';

/*
 * Expected amounts are worked out by hand: price x quantity x seconds left / seconds of March
 * (2,678,400), half-up to the cent. From MID_MARCH 1,382,400 seconds (16 days) are left.
 */

const MARCH_START = MARCH.current_period_start;
const catalog = catalogOf([ANALYTICS, ONBOARDING, STORAGE]);

const keep = (item: BillableItem, changes: Partial<ResolvedEntry> = {}): ResolvedEntry => ({
  id: item.subscription_item_id,
  product_id: item.product_id,
  quantity: item.quantity,
  included_units: item.included_units,
  ...(item.usage_limit ? { usage_limit: item.usage_limit } : {}),
  ...changes,
});
const add = (productId: number, changes: Partial<ResolvedEntry> = {}): ResolvedEntry => ({
  id: null,
  product_id: productId,
  quantity: 1,
  included_units: '0.00000000',
  ...changes,
});

function plan(
  items: BillableItem[],
  resolved: ResolvedEntry[],
  mode: ChangeMode,
  options: { at?: Date; catalog?: ChangeCatalog } = {},
): ItemSetPlan {
  return planItemSet(MARCH, items, resolved, options.catalog ?? catalog, {
    at: options.at ?? MID_MARCH,
    mode,
  });
}

const amounts = (result: Pick<ItemSetPlan, 'proration_lines'>) =>
  result.proration_lines.map((line) => [line.subscription_item_id, line.amount]);

function refusal(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('planItemSet accepted the change');
}

describe('planItemSet: kept items', () => {
  it('changes nothing when every item is kept as it is, in every mode', () => {
    for (const mode of ['prorate', 'none', 'direct'] as const) {
      const items = [seats(2), calls('1000.00000000')];
      const result = plan(items, [keep(items[0]!), keep(items[1]!, { included_units: '1000' })], mode);
      expect(result.updates).toEqual([]);
      expect(result.added).toEqual([]);
      expect(result.proration_lines).toEqual([]);
      expect(changesNothing(result)).toBe(true);
      expect(result.after).toEqual(items);
    }
  });

  it('re-quantifies with prorate: the base the period began with, a credit and a charge for the rest', () => {
    const result = plan([seats(2)], [keep(seats(2), { quantity: 5 })], 'prorate');
    expect(changesNothing(result)).toBe(false);
    expect(result.updates).toEqual([
      {
        id: 7,
        quantity: 5,
        included_units: '0.00000000',
        removed_at: null,
        base: {
          period_start: MARCH_START,
          quantity: 2,
          unit_price: '10.00000000',
          included_units: '0.00000000',
        },
      },
    ]);
    // 20.00 x 16/31 = 10.3226; 50.00 x 16/31 = 25.8065
    expect(result.proration_lines).toEqual([
      {
        description: 'Unused time on 2 x Seats, 2026-03-16 to 2026-03-31',
        subscription_item_id: 7,
        product_id: 3,
        quantity: '2.0000',
        unit_price: '10.00000000',
        amount: '-10.32000000',
        period_start: '2026-03-16T00:00:00.000Z',
        period_end: '2026-04-01T00:00:00.000Z',
      },
      {
        description: 'Remaining time on 5 x Seats, 2026-03-16 to 2026-03-31',
        subscription_item_id: 7,
        product_id: 3,
        quantity: '5.0000',
        unit_price: '10.00000000',
        amount: '25.81000000',
        period_start: '2026-03-16T00:00:00.000Z',
        period_end: '2026-04-01T00:00:00.000Z',
      },
    ]);
    expect(result.after).toEqual([{ ...seats(5), base: result.updates[0]!.base }]);
    expect(result.before).toEqual([seats(2)]);
    expect(result.effective_at).toEqual(MID_MARCH);
  });

  it('re-quantifies with none: the same base, no lines', () => {
    const result = plan([seats(2)], [keep(seats(2), { quantity: 5 })], 'none');
    expect(result.updates.map((update) => update.base?.quantity)).toEqual([2]);
    expect(result.proration_lines).toEqual([]);
  });

  it('re-quantifies directly: no base, no lines (a trial, or a scheduled change at its boundary)', () => {
    const result = plan([seats(2)], [keep(seats(2), { quantity: 5 })], 'direct');
    expect(result.updates).toEqual([
      { id: 7, quantity: 5, included_units: '0.00000000', removed_at: null, base: null },
    ]);
    expect(result.proration_lines).toEqual([]);
  });

  it('keeps the base the period began with across two changes, and lines for what each changed', () => {
    const first = plan([seats(2)], [keep(seats(2), { quantity: 5 })], 'prorate');
    const afterFirst = first.after;
    // 8 days (691,200 seconds) left: 50.00 x 8/31 = 12.9032; 70.00 x 8/31 = 18.0645
    const second = plan(afterFirst, [keep(afterFirst[0]!, { quantity: 7 })], 'prorate', {
      at: new Date('2026-03-24T00:00:00Z'),
    });
    expect(second.updates[0]?.base).toEqual({
      period_start: MARCH_START,
      quantity: 2,
      unit_price: '10.00000000',
      included_units: '0.00000000',
    });
    expect(amounts(second)).toEqual([
      [7, '-12.90000000'],
      [7, '18.06000000'],
    ]);
    // a direct change keeps the base the period already has
    expect(plan(afterFirst, [keep(afterFirst[0]!, { quantity: 7 })], 'direct').updates[0]?.base).toEqual(
      first.updates[0]!.base,
    );
  });

  it("replaces a base of an earlier period by the running period's", () => {
    const february = {
      period_start: new Date('2026-02-01T00:00:00Z'),
      quantity: 1,
      unit_price: '10.00000000',
      included_units: '0.00000000',
    };
    const item = seats(2, { base: february });
    expect(plan([item], [keep(item, { quantity: 3 })], 'none').updates[0]?.base).toEqual({
      period_start: MARCH_START,
      quantity: 2,
      unit_price: '10.00000000',
      included_units: '0.00000000',
    });
    expect(plan([item], [keep(item, { quantity: 3 })], 'direct').updates[0]?.base).toBeNull();
  });

  it("blends a metered item's included units by time, with no line, whatever the proration", () => {
    const item = calls('1000.00000000');
    for (const mode of ['prorate', 'none'] as const) {
      const result = plan(
        [seats(2), item],
        [keep(seats(2)), keep(item, { included_units: '2000.00000000' })],
        mode,
      );
      // 1000 - 1000 x 16/31 + 2000 x 16/31 = 1000 - 516.12903226 + 1032.25806452
      expect(result.updates).toEqual([
        {
          id: 8,
          quantity: 1,
          included_units: '2000.00000000',
          removed_at: null,
          base: {
            period_start: MARCH_START,
            quantity: 1,
            unit_price: '0.01000000',
            included_units: '1516.12903226',
          },
        },
      ]);
      expect(result.proration_lines).toEqual([]);
    }
  });
});

describe('planItemSet: usage limits', () => {
  const running = {
    period_start: MARCH_START,
    quantity: 1,
    unit_price: '0.01000000',
    included_units: '1000.00000000',
  };

  it('writes a new usage limit alone with the item as it was: not removed, its base kept, nothing charged', () => {
    const item = calls('1000.00000000', { usage_limit: '5000.00000000', base: running });
    const result = plan([item], [keep(item, { usage_limit: '8000.00000000' })], 'prorate');
    expect(result.updates).toEqual([
      {
        id: 8,
        quantity: 1,
        included_units: '1000.00000000',
        usage_limit: '8000.00000000',
        removed_at: null,
        base: running,
      },
    ]);
    expect(result.proration_lines).toEqual([]);
    expect(changesNothing(result)).toBe(false);
    expect(result.after.map((after) => [after.subscription_item_id, after.usage_limit])).toEqual([
      [8, '8000.00000000'],
    ]);
  });

  it('takes a limit written with other digits for the same limit: no update', () => {
    const item = calls('1000.00000000', { usage_limit: '5000.00000000' });
    const result = plan([item], [keep(item, { usage_limit: '5000' })], 'prorate');
    expect(result.updates).toEqual([]);
    expect(changesNothing(result)).toBe(true);
  });

  it('drops a limit the entry leaves out: the update carries none', () => {
    const item = calls('1000.00000000', { usage_limit: '5000.00000000' });
    const entry: ResolvedEntry = { id: 8, product_id: 4, quantity: 1, included_units: '1000.00000000' };
    const result = plan([item], [entry], 'none');
    expect(result.updates).toStrictEqual([
      { id: 8, quantity: 1, included_units: '1000.00000000', removed_at: null, base: null },
    ]);
    expect(result.after[0]?.usage_limit ?? null).toBeNull();
  });

  it("gives an item re-quantified its entry's limit, one removed its own, one added its entry's", () => {
    const item = calls('1000.00000000', { usage_limit: '5000.00000000' });
    const requantified = plan([item], [keep(item, { included_units: '2000.00000000' })], 'none');
    expect(requantified.updates[0]?.usage_limit).toBe('5000.00000000');
    const both = plan(
      [item],
      [keep(item, { included_units: '2000.00000000', usage_limit: '9000.00000000' })],
      'none',
    );
    expect(both.updates[0]?.usage_limit).toBe('9000.00000000');
    const removed = plan([seats(2), item], [keep(seats(2))], 'none');
    expect(removed.updates).toEqual([
      expect.objectContaining({
        id: 8,
        usage_limit: '5000.00000000',
        removed_at: '2026-03-16T00:00:00.000Z',
      }),
    ]);
    const added = plan(
      [seats(2)],
      [keep(seats(2)), add(STORAGE.id, { included_units: '10.00000000', usage_limit: '2000.00000000' })],
      'prorate',
    );
    expect(added.added.map((entry) => [entry.subscription_item_id, entry.usage_limit])).toEqual([
      [101, '2000.00000000'],
    ]);
  });
});

describe('planItemSet: the subscription currency', () => {
  it('bills in the currency code with its padding trimmed, as the database may give it', () => {
    const padded = planItemSet(
      { ...MARCH, currency: 'CAD ' },
      [seats(2)],
      [keep(seats(2), { quantity: 5 })],
      catalog,
      { at: MID_MARCH, mode: 'prorate' },
    );
    expect(amounts(padded)).toEqual([
      [7, '-10.32000000'],
      [7, '25.81000000'],
    ]);
  });

  it('refuses a currency with no known minor unit, even for a change that charges nothing', () => {
    const run = () =>
      planItemSet({ ...MARCH, currency: 'ZZZ' }, [seats(2)], [keep(seats(2))], catalog, {
        at: MID_MARCH,
        mode: 'none',
      });
    expect(run).toThrow(UnbillableError);
  });
});

describe('planItemSet: two changes of a metered allowance', () => {
  it('blends each change from the included units in force at it, not from the base so far', () => {
    const item = calls('1000.00000000');
    // Mar 1-16 at 1000, then 400: 1000 - 516.12903226 + 206.45161290 = 690.32258064
    const first = plan([item], [keep(item, { included_units: '400.00000000' })], 'prorate');
    expect(first.updates[0]?.base?.included_units).toBe('690.32258064');
    // then 100 from Mar 24 (8 d left): 690.32258064 - 103.22580645 + 25.80645161 = 612.90322580
    const second = plan(first.after, [keep(first.after[0]!, { included_units: '100.00000000' })], 'prorate', {
      at: new Date('2026-03-24T00:00:00Z'),
    });
    expect(second.updates[0]?.base?.included_units).toBe('612.90322580');
  });
});

describe('planItemSet: the change instant', () => {
  it('is taken to the second: removals, additions and the change are all timed at it', () => {
    const at = new Date('2026-03-16T00:00:00.750Z');
    const result = plan(
      [seats(2), calls('0.00000000')],
      [keep(calls('0.00000000')), add(ANALYTICS.id)],
      'prorate',
      {
        at,
      },
    );
    expect(result.effective_at.toISOString()).toBe('2026-03-16T00:00:00.000Z');
    expect(result.updates[0]?.removed_at).toBe('2026-03-16T00:00:00.000Z');
    expect(result.added[0]?.started_at?.toISOString()).toBe('2026-03-16T00:00:00.000Z');
  });
});

describe('planItemSet: removed items', () => {
  it('removes an item left out at the change, kept until its period is invoiced, with its credit', () => {
    const result = plan([seats(2), calls('1000.00000000')], [keep(calls('1000.00000000'))], 'prorate');
    expect(result.updates).toEqual([
      {
        id: 7,
        quantity: 2,
        included_units: '0.00000000',
        removed_at: '2026-03-16T00:00:00.000Z',
        base: {
          period_start: MARCH_START,
          quantity: 2,
          unit_price: '10.00000000',
          included_units: '0.00000000',
        },
      },
    ]);
    expect(amounts(result)).toEqual([[7, '-10.32000000']]);
    expect(result.after.map((item) => item.subscription_item_id)).toEqual([8]);
  });

  it('removes a metered item: its allowance for the time it had, no line', () => {
    const result = plan([seats(2), calls('1000.00000000')], [keep(seats(2))], 'prorate');
    expect(result.updates).toEqual([
      expect.objectContaining({
        id: 8,
        removed_at: '2026-03-16T00:00:00.000Z',
        base: expect.objectContaining({ included_units: '483.87096774' }),
      }),
    ]);
    expect(result.proration_lines).toEqual([]);
  });

  it('leaves items removed earlier in the period as they are', () => {
    const gone = calls('0.00000000', {
      subscription_item_id: 9,
      removed_at: new Date('2026-03-05T00:00:00Z'),
    });
    const result = plan([seats(2), gone], [keep(seats(2), { quantity: 3 })], 'prorate');
    expect(result.updates.map((update) => update.id)).toEqual([7]);
    expect(result.before.map((item) => item.subscription_item_id)).toEqual([7]);
  });
});

describe('planItemSet: added items', () => {
  it('adds with prorate: drawn ids, started at the change, base quantity 0, a charge for the rest', () => {
    const result = plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id, { quantity: 2 })], 'prorate');
    expect(result.added).toEqual([
      {
        subscription_item_id: 101,
        product_id: 20,
        product_name: 'Analytics seats',
        unit_label: 'unit',
        currency: 'CAD',
        pricing_type: 'recurring',
        usage_type: 'licensed',
        quantity: 2,
        unit_price: '15.00000000',
        included_units: '0.00000000',
        pricing: { pricing_model: 'per_unit', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
        started_at: MID_MARCH,
        removed_at: null,
        base: {
          period_start: MARCH_START,
          quantity: 0,
          unit_price: '15.00000000',
          included_units: '0.00000000',
        },
      },
    ]);
    // 30.00 x 16/31 = 15.4839
    expect(result.proration_lines).toEqual([
      {
        description: 'Remaining time on 2 x Analytics seats, 2026-03-16 to 2026-03-31',
        subscription_item_id: 101,
        product_id: 20,
        quantity: '2.0000',
        unit_price: '15.00000000',
        amount: '15.48000000',
        period_start: '2026-03-16T00:00:00.000Z',
        period_end: '2026-04-01T00:00:00.000Z',
      },
    ]);
    expect(result.updates).toEqual([]);
  });

  it('adds with none: no charge for a recurring item, the whole charge of a one-time item', () => {
    const result = plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id), add(ONBOARDING.id)], 'none');
    expect(result.added.map((item) => [item.subscription_item_id, item.started_at])).toEqual([
      [101, MID_MARCH],
      [102, MID_MARCH],
    ]);
    expect(result.proration_lines).toEqual([
      expect.objectContaining({
        description: 'Onboarding (one-time, added 2026-03-16)',
        subscription_item_id: 102,
        amount: '750.00000000',
      }),
    ]);
  });

  it('adds a one-time item with prorate: charged once, in full', () => {
    expect(amounts(plan([seats(2)], [keep(seats(2)), add(ONBOARDING.id)], 'prorate'))).toEqual([
      [101, '750.00000000'],
    ]);
  });

  it('adds directly: not started within the period, no base, no charge, not even one-time', () => {
    const result = plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id), add(ONBOARDING.id)], 'direct');
    expect(result.added.map((item) => [item.started_at, item.base])).toEqual([
      [null, null],
      [null, null],
    ]);
    expect(result.proration_lines).toEqual([]);
  });

  it('adds a metered item at quantity 1, its allowance for the time left, no line', () => {
    const result = plan(
      [seats(2)],
      [keep(seats(2)), add(STORAGE.id, { included_units: '1000.00000000' })],
      'prorate',
    );
    expect(result.added).toEqual([
      expect.objectContaining({
        subscription_item_id: 101,
        usage_type: 'metered',
        quantity: 1,
        included_units: '1000.00000000',
        started_at: MID_MARCH,
        // 1000 x 16/31
        base: {
          period_start: MARCH_START,
          quantity: 0,
          unit_price: '0.50000000',
          included_units: '516.12903226',
        },
      }),
    ]);
    expect(result.proration_lines).toEqual([]);
  });

  it('charges an item an earlier change of the period added never again (the diff, not the state)', () => {
    for (const mode of ['prorate', 'none'] as const) {
      const first = plan([seats(2)], [keep(seats(2)), add(ONBOARDING.id), add(ANALYTICS.id)], mode);
      let items = first.after;
      for (let change = 1; change <= 3; change++) {
        const next = plan(
          items,
          [keep(items[0]!, { quantity: 2 + change }), keep(items[1]!), keep(items[2]!)],
          mode,
          { at: new Date(`2026-03-${16 + change}T00:00:00Z`) },
        );
        expect(next.added).toEqual([]);
        expect(next.proration_lines.every((line) => line.subscription_item_id === 7)).toBe(true);
        items = next.after;
      }
    }
  });

  it('counts an added item alone, with no item updated, as a change', () => {
    const result = plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id)], 'none');
    expect(result.updates).toEqual([]);
    expect(changesNothing(result)).toBe(false);
  });

  it('lists the items after the change in the order of the entries', () => {
    const result = plan(
      [seats(2), calls('0.00000000')],
      [add(ANALYTICS.id), keep(calls('0.00000000')), add(STORAGE.id)],
      'prorate',
    );
    expect(result.after.map((item) => item.subscription_item_id)).toEqual([101, 8, 102]);
  });

  it('gives a preview provisional ids: the lines and the items name them', () => {
    const preview = catalogOf([ANALYTICS, STORAGE], { newItemIds: [-1, -2] });
    const result = plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id), add(STORAGE.id)], 'prorate', {
      catalog: preview,
    });
    expect(result.added.map((item) => item.subscription_item_id)).toEqual([-1, -2]);
    expect(result.after.map((item) => item.subscription_item_id)).toEqual([7, -1, -2]);
    expect(amounts(result)).toEqual([[-1, '7.74000000']]);
  });
});

describe('planItemSet: the door checks', () => {
  it("refuses charges that do not fit an invoice, naming the item's quantity", () => {
    const costly = catalogOf([{ ...ANALYTICS, unit_price: '900000000000.00000000' }]);
    for (const mode of ['prorate', 'direct'] as const) {
      const refused = refusal(() =>
        plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id)], mode, { catalog: costly }),
      );
      expect(refused.status).toBe(422);
      expect(refused.details).toEqual([
        expect.objectContaining({ field: 'items.1.quantity', code: 'out_of_range' }),
      ]);
    }
  });

  it('refuses a running period that, with the lines waiting and this change, no invoice can hold', () => {
    const fit = {
      field: 'items',
      message: 'The running period with this change is more than an invoice can hold with the highest tax.',
      code: 'out_of_range',
    };
    const heavy = catalogOf([ANALYTICS], {
      pendingLines: { sum: '869565217370.00000000', largest: '1.00000000' },
    });
    // 869,565,217,370 + 20.00 of seats + 7.74 of the added item, plus 15 % tax, passes 999,999,999,999.99999999
    expect(
      refusal(() => plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id)], 'prorate', { catalog: heavy }))
        .details,
    ).toEqual([fit]);
    // without the change's line it still fits
    expect(plan([seats(2)], [keep(seats(2))], 'prorate', { catalog: heavy }).updates).toEqual([]);
    const oneHuge = catalogOf([ANALYTICS], { pendingLines: { sum: '0', largest: '900000000000.00000000' } });
    expect(
      refusal(() => plan([seats(2)], [keep(seats(2), { quantity: 3 })], 'none', { catalog: oneHuge }))
        .details,
    ).toEqual([fit]);
    // a metered item's price is no charge of the running period: only its usage is
    const nearly = catalogOf([ANALYTICS], {
      pendingLines: { sum: '869565217000.00000000', largest: '1.00000000' },
    });
    const pricey = calls('0.00000000', { unit_price: '1000.00000000' });
    expect(
      plan([seats(2), pricey], [keep(seats(2), { quantity: 3 }), keep(pricey)], 'prorate', {
        catalog: nearly,
      }).updates,
    ).toHaveLength(1);
    // an item whose own charge cannot fit is named alone, not the running period as well
    const costlyAndHeavy = catalogOf([{ ...ANALYTICS, unit_price: '900000000000.00000000' }], {
      pendingLines: heavy.pendingLines,
    });
    expect(
      refusal(() =>
        plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id)], 'prorate', { catalog: costlyAndHeavy }),
      ).details,
    ).toEqual([expect.objectContaining({ field: 'items.1.quantity' })]);
    // credits waiting that add up past what an invoice can store are refused too, though each fits
    const credits = catalogOf([ANALYTICS], {
      pendingLines: { sum: '-1000000000000.00000000', largest: '500000000000.00000000' },
    });
    expect(
      refusal(() => plan([seats(2)], [keep(seats(2), { quantity: 3 })], 'none', { catalog: credits }))
        .details,
    ).toEqual([fit]);
    // a direct change bills nothing of the running period: nothing to fit
    expect(
      plan([seats(2)], [keep(seats(2)), add(ANALYTICS.id)], 'direct', { catalog: heavy }).added,
    ).toHaveLength(1);
  });
});

describe('endItemsAt', () => {
  it('ends every item at the instant, as a change removing them all would, and keeps them', () => {
    const items = [seats(2), calls('1000.00000000')];
    const ended = endItemsAt(MARCH, items, { at: MID_MARCH, mode: 'prorate' });
    expect(ended.items.map((item) => [item.subscription_item_id, item.removed_at])).toEqual([
      [7, MID_MARCH],
      [8, MID_MARCH],
    ]);
    expect(ended.lines.map((line) => [line.subscription_item_id, line.amount])).toEqual([
      [7, '-10.32000000'],
    ]);
    expect(endItemsAt(MARCH, items, { at: MID_MARCH, mode: 'none' }).lines).toEqual([]);
    expect(items[0]?.removed_at).toBeNull();
  });
});
