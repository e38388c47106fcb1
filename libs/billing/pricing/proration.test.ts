import { describe, expect, it } from 'vitest';
import { periodEndAfter } from '../domain/periods.js';
import type { BillableItem } from './billable-item.js';
import { blendIncludedUnits, proratedIncludedUnits, prorationLinesFor } from './proration.js';

/*
 * Expected amounts are computed by hand: price x quantity x (seconds left / seconds of the period),
 * rounded half-up to the cent; the seconds are written out in each case.
 */

function seat(quantity: number, unitPrice: string, overrides: Partial<BillableItem> = {}): BillableItem {
  return {
    subscription_item_id: 7,
    product_id: 3,
    product_name: 'Seat',
    unit_label: 'seat',
    currency: 'CAD',
    pricing_type: 'recurring',
    usage_type: 'licensed',
    quantity,
    unit_price: unitPrice,
    included_units: '0',
    pricing: { pricing_model: 'per_unit', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
    ...overrides,
  };
}

const utc = (text: string) => new Date(text);

function amounts(
  before: BillableItem | undefined,
  after: BillableItem | undefined,
  period: [string, string],
  at: string,
): string[] {
  return prorationLinesFor(before, after, {
    at: utc(at),
    period: { start: utc(period[0]), end: utc(period[1]) },
    currency: 'CAD',
  }).map((line) => line.amount);
}

describe('proration to the second', () => {
  it('monthly, a 31-day month: upgrade 2 -> 5 at 12.50, milliseconds dropped', () => {
    // left: Mar 11 06:30:15 -> Apr 1 = 20 d 17:29:45 = 1,790,985 s of 2,678,400 s
    // credit 25.00 x 1790985/2678400 = 16.71693 -> 16.72; charge 62.50 x ... = 41.79232 -> 41.79
    expect(
      amounts(
        seat(2, '12.50000000'),
        seat(5, '12.50000000'),
        ['2026-03-01T00:00:00Z', '2026-04-01T00:00:00Z'],
        '2026-03-11T06:30:15.400Z',
      ),
    ).toEqual(['-16.72000000', '41.79000000']);
  });

  it('monthly, a 28-day February: downgrade 10 -> 4 at 9.99', () => {
    // left 9 d of 28 d: credit 99.90 x 9/28 = 32.110714 -> 32.11; charge 39.96 x 9/28 = 12.844286 -> 12.84
    expect(
      amounts(
        seat(10, '9.99'),
        seat(4, '9.99'),
        ['2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z'],
        '2026-02-20T00:00:00Z',
      ),
    ).toEqual(['-32.11000000', '12.84000000']);
  });

  it('monthly, a 29-day leap February: an item added halfway lands on a half cent, rounded up', () => {
    // left 14.5 d of 29 d = 1/2: 3 x 19.99 = 59.97 / 2 = 29.985 -> 29.99
    expect(
      amounts(
        undefined,
        seat(3, '19.99'),
        ['2028-02-01T00:00:00Z', '2028-03-01T00:00:00Z'],
        '2028-02-15T12:00:00Z',
      ),
    ).toEqual(['29.99000000']);
  });

  it('monthly, a 30-day month: an item removed leaves a credit only', () => {
    // left 10 d of 30 d: 100 x 1/3 = 33.333 -> 33.33
    expect(
      amounts(
        seat(1, '100'),
        undefined,
        ['2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'],
        '2026-04-21T00:00:00Z',
      ),
    ).toEqual(['-33.33000000']);
  });

  it('a credit on a half cent rounds away from zero, mirroring the charge', () => {
    // left 15.5 d of 31 d = 1/2: 0.31 / 2 = 0.155 -> 0.16
    expect(
      amounts(
        seat(1, '0.31'),
        undefined,
        ['2026-03-01T00:00:00Z', '2026-04-01T00:00:00Z'],
        '2026-03-16T12:00:00Z',
      ),
    ).toEqual(['-0.16000000']);
  });

  it('anchor days 31, 30 and 29 through a 28-day February', () => {
    // anchor 31: Jan 31 -> Feb 28 = 28 d; left Feb 10 -> Feb 28 = 18 d: 49 x 18/28 = 31.50, 98 x 18/28 = 63.00
    const end31 = periodEndAfter(utc('2026-01-31T00:00:00Z'), 'monthly', 31);
    expect(end31.toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(
      amounts(
        seat(1, '49'),
        seat(2, '49'),
        ['2026-01-31T00:00:00Z', end31.toISOString()],
        '2026-02-10T00:00:00Z',
      ),
    ).toEqual(['-31.50000000', '63.00000000']);
    // anchor 30: Jan 30 -> Feb 28 = 29 d = 2,505,600 s; left Feb 10 17:45 -> Feb 28 = 1,491,300 s
    // 45.75 x 1491300/2505600 = 27.229795 -> 27.23; 15.25 x ... = 9.076598 -> 9.08
    const end30 = periodEndAfter(utc('2026-01-30T00:00:00Z'), 'monthly', 30);
    expect(end30.toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(
      amounts(
        seat(3, '15.25'),
        seat(1, '15.25'),
        ['2026-01-30T00:00:00Z', end30.toISOString()],
        '2026-02-10T17:45:00Z',
      ),
    ).toEqual(['-27.23000000', '9.08000000']);
    // anchor 29: Jan 29 -> Feb 28 = 30 d = 2,592,000 s; left Feb 1 00:00:01 -> Feb 28 = 2,332,799 s
    // 29.99 x 2332799/2592000 = 26.990988 -> 26.99; 209.93 x ... = 188.936919 -> 188.94
    const end29 = periodEndAfter(utc('2026-01-29T00:00:00Z'), 'monthly', 29);
    expect(end29.toISOString()).toBe('2026-02-28T00:00:00.000Z');
    expect(
      amounts(
        seat(1, '29.99'),
        seat(7, '29.99'),
        ['2026-01-29T00:00:00Z', end29.toISOString()],
        '2026-02-01T00:00:01Z',
      ),
    ).toEqual(['-26.99000000', '188.94000000']);
  });

  it('quarterly, anchor 31: Jan 31 -> Apr 30 (89 d)', () => {
    // 7,689,600 s; left Mar 15 08:00 -> Apr 30 = 45 d 16 h = 3,945,600 s
    // 480 x 3945600/7689600 = 246.292135 -> 246.29; 720 x ... = 369.438202 -> 369.44
    const end = periodEndAfter(utc('2026-01-31T00:00:00Z'), 'quarterly', 31);
    expect(end.toISOString()).toBe('2026-04-30T00:00:00.000Z');
    expect(
      amounts(
        seat(4, '120'),
        seat(6, '120'),
        ['2026-01-31T00:00:00Z', end.toISOString()],
        '2026-03-15T08:00:00Z',
      ),
    ).toEqual(['-246.29000000', '369.44000000']);
  });

  it('annually, over a leap day (366 d), anchor 29', () => {
    // 31,622,400 s; left Dec 1 2027 -> May 29 2028 = 180 d = 15,552,000 s
    // 2399.98 x 180/366 = 1180.318033 -> 1180.32; 3599.97 x 180/366 = 1770.477049 -> 1770.48
    const end = periodEndAfter(utc('2027-05-29T00:00:00Z'), 'annually', 29);
    expect(end.toISOString()).toBe('2028-05-29T00:00:00.000Z');
    expect(
      amounts(
        seat(2, '1199.99'),
        seat(3, '1199.99'),
        ['2027-05-29T00:00:00Z', end.toISOString()],
        '2027-12-01T00:00:00Z',
      ),
    ).toEqual(['-1180.32000000', '1770.48000000']);
  });

  it('counts whole seconds of [at, period end): a second is worth a cent at a price of one per second', () => {
    // February 2026 has 28 d = 2,419,200 s; at 24,192.00 a period, each second is 0.01.
    // At Feb 8 00:00:00.999 the change is timed to Feb 8 00:00:00 (docs/decisions.md, "Subscription
    // changes": whole seconds of [period start, period end)): 21 d = 1,814,400 s left, 18,144.00,
    // neither the change's second counted twice (18,144.01) nor rounded up to the next (18,143.99).
    const february: [string, string] = ['2026-02-01T00:00:00Z', '2026-03-01T00:00:00Z'];
    expect(amounts(undefined, seat(1, '24192'), february, '2026-02-08T00:00:00.999Z')).toEqual([
      '18144.00000000',
    ]);
    expect(amounts(seat(1, '24192'), undefined, february, '2026-02-08T00:00:00.999Z')).toEqual([
      '-18144.00000000',
    ]);
    // one second before the end: one second left, 0.01
    expect(amounts(undefined, seat(1, '24192'), february, '2026-02-28T23:59:59.500Z')).toEqual([
      '0.01000000',
    ]);
  });

  it('gives no line for an unchanged item, a metered item, a removed one-time item, or at the period end', () => {
    const period: [string, string] = ['2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'];
    expect(amounts(seat(2, '10'), seat(2, '10'), period, '2026-04-10T00:00:00Z')).toEqual([]);
    const meter = seat(0, '0.01', { usage_type: 'metered', pricing_type: 'usage' });
    expect(amounts(undefined, meter, period, '2026-04-10T00:00:00Z')).toEqual([]);
    const setup = seat(1, '250', { pricing_type: 'one_time' });
    expect(amounts(setup, undefined, period, '2026-04-10T00:00:00Z')).toEqual([]);
    expect(amounts(undefined, setup, period, '2026-04-10T00:00:00Z')).toEqual(['250.00000000']);
    expect(amounts(seat(1, '10'), seat(3, '10'), period, '2026-05-01T00:00:00Z')).toEqual([]);
  });

  it('gives no line in a period that ended where it began (stopped at its start), even for a change before it', () => {
    const empty: [string, string] = ['2026-04-01T00:00:00Z', '2026-04-01T00:00:00Z'];
    expect(amounts(seat(1, '10'), seat(3, '10'), empty, '2026-03-20T00:00:00Z')).toEqual([]);
    expect(amounts(undefined, seat(3, '10'), empty, '2026-03-20T00:00:00Z')).toEqual([]);
  });

  it('a price change at the same quantity is prorated like a quantity change', () => {
    // 2 seats, 10.00 -> 16.00 each, 10 d of 30 left: credit 20 x 1/3 = 6.67, charge 32 x 1/3 = 10.67
    expect(
      amounts(
        seat(2, '10'),
        seat(2, '16'),
        ['2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'],
        '2026-04-21T00:00:00Z',
      ),
    ).toEqual(['-6.67000000', '10.67000000']);
  });

  it('a one-time item is charged once when added, never again when its quantity changes', () => {
    const setup = (quantity: number) => seat(quantity, '250', { pricing_type: 'one_time' });
    const period: [string, string] = ['2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'];
    expect(amounts(setup(1), setup(3), period, '2026-04-10T00:00:00Z')).toEqual([]);
  });

  it('a line covers [the change second, period end) and names the last day it covers', () => {
    const [credit, charge] = prorationLinesFor(seat(1, '10'), seat(2, '10'), {
      at: utc('2026-04-21T09:15:30.750Z'),
      period: { start: utc('2026-04-01T00:00:00Z'), end: utc('2026-05-01T00:00:00Z') },
      currency: 'CAD',
    });
    expect(credit).toMatchObject({
      period_start: '2026-04-21T09:15:30.000Z',
      period_end: '2026-05-01T00:00:00.000Z',
      description: 'Unused time on 1 x Seat, 2026-04-21 to 2026-04-30',
    });
    expect(charge).toMatchObject({
      period_start: '2026-04-21T09:15:30.000Z',
      description: 'Remaining time on 2 x Seat, 2026-04-21 to 2026-04-30',
    });
  });

  it('prorates tiered prices on the whole-period amount of each quantity', () => {
    const tiered = (quantity: number) =>
      seat(quantity, '0', {
        pricing: {
          pricing_model: 'per_unit',
          pricing_scheme: 'tiered',
          pricing_mode: 'graduated',
          tiers: [
            { up_to: '5', unit_price: '10', flat_fee: '0' },
            { up_to: null, unit_price: '6', flat_fee: '0' },
          ],
        },
      });
    // 5 -> 8 seats: 50.00 -> 68.00 a period; left 10 d of 30: 16.666667 -> 16.67, 22.666667 -> 22.67
    expect(
      amounts(tiered(5), tiered(8), ['2026-04-01T00:00:00Z', '2026-05-01T00:00:00Z'], '2026-04-21T00:00:00Z'),
    ).toEqual(['-16.67000000', '22.67000000']);
  });
});

describe("proration in the currency's minor unit", () => {
  const april = { start: utc('2026-04-01T00:00:00Z'), end: utc('2026-05-01T00:00:00Z') };
  const linesIn = (
    currency: string,
    before: BillableItem | undefined,
    after: BillableItem | undefined,
  ): string[] =>
    prorationLinesFor(before, after, { at: utc('2026-04-21T00:00:00Z'), period: april, currency }).map(
      (line) => line.amount,
    );

  it('rounds a JPY line to whole yen and a KWD line to thousandths, half-up', () => {
    // 10 d of 30 left. JPY 2 -> 5 at 1,000: credit 2,000 / 3 = 666.67 -> 667, charge 5,000 / 3 -> 1,667
    const yen = (quantity: number) => seat(quantity, '1000', { currency: 'JPY' });
    expect(linesIn('JPY', yen(2), yen(5))).toEqual(['-667.00000000', '1667.00000000']);
    // KWD 2 -> 5 at 1.001: credit 2.002 / 3 = 0.667333 -> 0.667, charge 5.005 / 3 = 1.668333 -> 1.668
    const dinar = (quantity: number) => seat(quantity, '1.001', { currency: 'KWD' });
    expect(linesIn('KWD', dinar(2), dinar(5))).toEqual(['-0.66700000', '1.66800000']);
  });

  it('charges a one-time item added mid-period in whole minor units', () => {
    // 1 x 1,234.5 yen, charged in full: a half yen, up to 1,235; 3 x 0.3335 KWD = 1.0005 -> 1.001
    expect(
      linesIn('JPY', undefined, seat(1, '1234.5', { currency: 'JPY', pricing_type: 'one_time' })),
    ).toEqual(['1235.00000000']);
    expect(
      linesIn('KWD', undefined, seat(3, '0.3335', { currency: 'KWD', pricing_type: 'one_time' })),
    ).toEqual(['1.00100000']);
  });
});

describe('the unit price a line shows is the one its amount was computed with', () => {
  const period = { start: utc('2026-04-01T00:00:00Z'), end: utc('2026-05-01T00:00:00Z') };
  const tiered = (
    mode: 'volume' | 'graduated' | 'flat',
    quantity: number,
    overrides: Partial<BillableItem> = {},
  ): BillableItem =>
    seat(quantity, '0', {
      pricing: {
        pricing_model: 'per_unit',
        pricing_scheme: 'tiered',
        pricing_mode: mode,
        tiers: [
          { up_to: '5', unit_price: '10', flat_fee: '20' },
          { up_to: null, unit_price: '6', flat_fee: '40' },
        ],
      },
      ...overrides,
    });
  const shown = (before: BillableItem | undefined, after: BillableItem | undefined) =>
    prorationLinesFor(before, after, { at: utc('2026-04-21T00:00:00Z'), period, currency: 'CAD' }).map(
      (line) => [line.quantity, line.unit_price, line.amount],
    );

  it('tiered: the average at the quantity, in every mode', () => {
    // graduated: 5 = 5 x 10 + 20 = 70 (14 each); 8 = 70 + 3 x 6 + 40 = 128 (16 each); 10 d of 30 left
    expect(shown(tiered('graduated', 5), tiered('graduated', 8))).toEqual([
      ['5.0000', '14.00000000', '-23.33000000'],
      ['8.0000', '16.00000000', '42.67000000'],
    ]);
    // volume: 3 = 3 x 10 + 20 = 50 (16.66666667 each); 7 = 7 x 6 + 40 = 82 (11.71428571 each)
    expect(shown(tiered('volume', 3), tiered('volume', 7))).toEqual([
      ['3.0000', '16.66666667', '-16.67000000'],
      ['7.0000', '11.71428571', '27.33000000'],
    ]);
    // flat (stair-step): 3 = the fee 20 (6.66666667 each); 7 = 40 (5.71428571 each)
    expect(shown(tiered('flat', 3), tiered('flat', 7))).toEqual([
      ['3.0000', '6.66666667', '-6.67000000'],
      ['7.0000', '5.71428571', '13.33000000'],
    ]);
  });

  it('a one-time tiered charge and a flat fee show the price they were charged at', () => {
    expect(shown(undefined, tiered('graduated', 8, { pricing_type: 'one_time' }))).toEqual([
      ['8.0000', '16.00000000', '128.00000000'],
    ]);
    const fee = (quantity: number) =>
      seat(quantity, '30', {
        pricing: { pricing_model: 'flat_fee', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
      });
    // one fee a period whatever the quantity: shown as 1 x 30.00, as its invoice line is
    expect(shown(fee(2), fee(4))).toEqual([
      ['1.0000', '30.00000000', '-10.00000000'],
      ['1.0000', '30.00000000', '10.00000000'],
    ]);
    // a linear price per unit is its own average
    expect(shown(seat(2, '12.5'), seat(3, '12.5'))).toEqual([
      ['2.0000', '12.50000000', '-8.33000000'],
      ['3.0000', '12.50000000', '12.50000000'],
    ]);
  });
});

describe('included units prorated like the time they cover', () => {
  const april = { start: utc('2026-04-01T00:00:00Z'), end: utc('2026-05-01T00:00:00Z') };

  it('an item added or removed mid-period gets the share of its time', () => {
    // 1000 units x 20 d / 30 d = 666.66666667 (half-up at 8 digits)
    expect(proratedIncludedUnits('1000', { start: utc('2026-04-11T00:00:00Z'), end: april.end }, april)).toBe(
      '666.66666667',
    );
    // removed after 10 d: 1000 x 10/30 = 333.33333333
    expect(
      proratedIncludedUnits('1000', { start: april.start, end: utc('2026-04-11T00:00:00Z') }, april),
    ).toBe('333.33333333');
    expect(proratedIncludedUnits('1000', april, april)).toBe('1000.00000000');
    // on since before the period, removed after 10 d of it: the part in the period only
    expect(
      proratedIncludedUnits(
        '1000',
        { start: utc('2026-03-01T00:00:00Z'), end: utc('2026-04-11T00:00:00Z') },
        april,
      ),
    ).toBe('333.33333333');
    expect(
      proratedIncludedUnits(
        '1000',
        { start: utc('2026-03-01T00:00:00Z'), end: utc('2026-06-01T00:00:00Z') },
        april,
      ),
    ).toBe('1000.00000000');
  });

  it('counts the whole seconds of the cover, its first second included, as proration lines do', () => {
    // added at Apr 11 00:00:00.999: timed to Apr 11 00:00:00 as its lines are, 20 d of 30 left,
    // not one second less for the milliseconds (1000 x 1,727,999 / 2,592,000 = 666.66628086)
    expect(
      proratedIncludedUnits('1000', { start: utc('2026-04-11T00:00:00.999Z'), end: april.end }, april),
    ).toBe('666.66666667');
    // removed at Apr 11 00:00:00.999: the cover ends at its second, 10 d of 30, not one second more
    // (1000 x 864,001 / 2,592,000 = 333.33371914)
    expect(
      proratedIncludedUnits('1000', { start: april.start, end: utc('2026-04-11T00:00:00.999Z') }, april),
    ).toBe('333.33333333');
  });

  it('only the part of the cover inside the period counts', () => {
    // from Apr 11 on, past the period end: Apr 11 -> May 1 = 20 d of 30
    expect(
      proratedIncludedUnits(
        '1000',
        { start: utc('2026-04-11T00:00:00Z'), end: utc('2026-06-01T00:00:00Z') },
        april,
      ),
    ).toBe('666.66666667');
    // a cover that ended before the period began gives nothing, never a negative allowance
    expect(
      proratedIncludedUnits(
        '1000',
        { start: utc('2026-02-01T00:00:00Z'), end: utc('2026-03-01T00:00:00Z') },
        april,
      ),
    ).toBe('0.00000000');
  });

  it('rounds a prorated allowance half-up at 8 digits: a half unit of the last digit goes up', () => {
    // 0.00000003 units x 15 d / 30 d = 0.000000015: a half, up to 0.00000002 (not down to 0.00000001)
    expect(
      proratedIncludedUnits('0.00000003', { start: utc('2026-04-16T00:00:00Z'), end: april.end }, april),
    ).toBe('0.00000002');
    // 0.00000001 x 1/2 = 0.000000005 -> 0.00000001, not 0
    expect(
      proratedIncludedUnits('0.00000001', { start: april.start, end: utc('2026-04-16T00:00:00Z') }, april),
    ).toBe('0.00000001');
  });

  it('gives the whole allowance for a period that ended where it began, without dividing by zero', () => {
    // a subscription stopped at its period start: the cover spans all (none) of the period
    const empty = { start: april.start, end: april.start };
    expect(proratedIncludedUnits('1000', april, empty)).toBe('1000.00000000');
  });

  it('a change of included units at or after the period end leaves the allowance as it was', () => {
    expect(blendIncludedUnits('1000', { before: '1000', after: '400', at: april.end }, april)).toBe(
      '1000.00000000',
    );
    expect(
      blendIncludedUnits('1000', { before: '1000', after: '400', at: utc('2026-05-11T00:00:00Z') }, april),
    ).toBe('1000.00000000');
  });

  it('a blended allowance never goes below zero', () => {
    // the period's allowance so far (100) is less than the old allowance's remaining share (500)
    expect(
      blendIncludedUnits('100', { before: '1000', after: '0', at: utc('2026-04-16T00:00:00Z') }, april),
    ).toBe('0.00000000');
  });

  it('a change of included units blends the old and the new by time', () => {
    // 1000 for 10 d, then 400 for 20 d: 333.33333333 + 266.66666667 = 600
    expect(
      blendIncludedUnits('1000', { before: '1000', after: '400', at: utc('2026-04-11T00:00:00Z') }, april),
    ).toBe('600.00000000');
  });
});
