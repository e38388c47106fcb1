import { describe, expect, it } from 'vitest';
import {
  type BurnableGrant,
  type BurnableInvoice,
  isUsable,
  planBurnDown,
  planBurnDowns,
  totalUsed,
} from './burn-down.js';

const at = new Date('2026-06-15T12:00:00Z');
const day = (iso: string) => new Date(`${iso}T00:00:00Z`);

function grant(id: string, overrides: Partial<BurnableGrant> = {}): BurnableGrant {
  return {
    id,
    status: 'ACTIVE',
    currency: 'CAD',
    remaining: '100.00000000',
    priority: 50,
    applies_to: 'all',
    effective_at: day('2026-01-01'),
    expires_at: null,
    created_at: day('2026-01-01'),
    ...overrides,
  };
}

function invoice(overrides: Partial<BurnableInvoice> = {}): BurnableInvoice {
  return {
    currency: 'CAD',
    balance: '250.00000000',
    usage_amount: '0.00000000',
    prepaid_credits: false,
    ...overrides,
  };
}

const pairs = (uses: ReturnType<typeof planBurnDown>) => uses.map((use) => [use.credit_grant_id, use.amount]);

describe('planBurnDown', () => {
  it('burns lower priority first, then the soonest expiry, then the oldest, then by id', () => {
    const grants = [
      grant('e-no-expiry', { priority: 10 }),
      grant('d-later', { priority: 10, expires_at: day('2026-12-01') }),
      grant('c-sooner', { priority: 10, expires_at: day('2026-07-01') }),
      grant('b-newer', { priority: 10, expires_at: day('2026-07-01'), created_at: day('2026-03-01') }),
      grant('a-high', { priority: 90 }),
      grant('z-same', { priority: 10, expires_at: day('2026-07-01') }),
    ];
    const uses = planBurnDown(invoice({ balance: '10000.00000000' }), grants, at);
    expect(uses.map((use) => use.credit_grant_id)).toEqual([
      'c-sooner',
      'z-same',
      'b-newer',
      'd-later',
      'e-no-expiry',
      'a-high',
    ]);
  });

  it('breaks a full tie (priority, expiry, creation) by id, whatever order the grants come in', () => {
    const tied = { priority: 10, expires_at: day('2026-07-01'), remaining: '10.00000000' };
    const grants = [grant('c', tied), grant('a', tied), grant('b', tied)];
    const uses = planBurnDown(invoice({ balance: '25.00000000' }), grants, at);
    expect(pairs(uses)).toEqual([
      ['a', '10.00000000'],
      ['b', '10.00000000'],
      ['c', '5.00000000'],
    ]);
  });

  it('pays at most what is owed; the grant that covers the rest keeps its remainder', () => {
    const uses = planBurnDown(invoice({ balance: '150.00000000' }), [grant('a'), grant('b')], at);
    expect(uses).toEqual([
      { credit_grant_id: 'a', amount: '100.00000000', remaining_after: '0.00000000' },
      { credit_grant_id: 'b', amount: '50.00000000', remaining_after: '50.00000000' },
    ]);
    expect(planBurnDown(invoice({ balance: '0.00000000' }), [grant('a')], at)).toEqual([]);
  });

  it('usage grants together pay at most the metered lines and their tax; others pay the rest', () => {
    const grants = [
      grant('usage-1', { priority: 1, applies_to: 'usage', remaining: '30.00000000' }),
      grant('usage-2', { priority: 2, applies_to: 'usage', remaining: '30.00000000' }),
      grant('all', { priority: 3, remaining: '500.00000000' }),
    ];
    const uses = planBurnDown(invoice({ balance: '250.00000000', usage_amount: '45.00000000' }), grants, at);
    expect(pairs(uses)).toEqual([
      ['usage-1', '30.00000000'],
      ['usage-2', '15.00000000'],
      ['all', '205.00000000'],
    ]);
    // no metered line: a usage grant pays nothing
    expect(pairs(planBurnDown(invoice(), [grant('u', { applies_to: 'usage' })], at))).toEqual([]);
  });

  it('a usage grant with no usage left to pay is passed over: the grants after it still pay', () => {
    const grants = [
      grant('usage-1', { priority: 1, applies_to: 'usage', remaining: '30.00000000' }),
      grant('usage-2', { priority: 2, applies_to: 'usage', remaining: '30.00000000' }),
      grant('all', { priority: 3, remaining: '500.00000000' }),
    ];
    const uses = planBurnDown(invoice({ balance: '250.00000000', usage_amount: '30.00000000' }), grants, at);
    expect(pairs(uses)).toEqual([
      ['usage-1', '30.00000000'],
      ['all', '220.00000000'],
    ]);
  });

  it('what an "all" grant paid first leaves the usage cap as it was: usage grants still pay all usage', () => {
    // 100.00 owed, 50.00 of it usage: the "all" grant pays 30.00 of something, the usage grant then
    // pays the whole 50.00 of usage (not 20.00), and 20.00 is left owed
    const grants = [
      grant('all', { priority: 1, remaining: '30.00000000' }),
      grant('usage', { priority: 2, applies_to: 'usage', remaining: '100.00000000' }),
    ];
    const uses = planBurnDown(invoice({ balance: '100.00000000', usage_amount: '50.00000000' }), grants, at);
    expect(pairs(uses)).toEqual([
      ['all', '30.00000000'],
      ['usage', '50.00000000'],
    ]);
  });

  it('never pays a prepaid-credits invoice', () => {
    expect(planBurnDown(invoice({ prepaid_credits: true }), [grant('a')], at)).toEqual([]);
  });

  it('passes over grants that are not ACTIVE, in another currency, or empty', () => {
    const grants = [
      grant('pending', { status: 'PENDING' }),
      grant('depleted', { status: 'DEPLETED' }),
      grant('expired', { status: 'EXPIRED' }),
      grant('voided', { status: 'VOIDED' }),
      grant('usd', { currency: 'USD' }),
      grant('empty', { remaining: '0.00000000' }),
      grant('good'),
    ];
    expect(pairs(planBurnDown(invoice(), grants, at))).toEqual([['good', '100.00000000']]);
    // the credit balance counts and dates (next_expiry) the usable grants: an empty one is not
    expect(isUsable(grant('empty', { remaining: '0.00000000' }), 'CAD', at)).toBe(false);
    expect(isUsable(grant('cent', { remaining: '0.01000000' }), 'CAD', at)).toBe(true);
  });

  it('matches the currency of a grant and of an invoice whatever spaces a stored row pads them with', () => {
    // a currency read back from a fixed-width column may carry trailing spaces: CAD is still CAD
    expect(isUsable(grant('padded', { currency: 'CAD ' }), 'CAD', at)).toBe(true);
    expect(isUsable(grant('plain'), ' CAD', at)).toBe(true);
    expect(
      pairs(planBurnDown(invoice({ currency: 'CAD  ' }), [grant('padded', { currency: 'CAD ' })], at)),
    ).toEqual([['padded', '100.00000000']]);
  });

  it('a grant is usable from its effective instant and not at its expiry instant', () => {
    const from = grant('from', { effective_at: at });
    const notYet = grant('not-yet', { effective_at: new Date(at.getTime() + 1) });
    const endsNow = grant('ends-now', { expires_at: at });
    const endsLater = grant('ends-later', { expires_at: new Date(at.getTime() + 1) });
    expect(pairs(planBurnDown(invoice(), [from, notYet, endsNow, endsLater], at)).map(([id]) => id)).toEqual([
      'ends-later',
      'from',
    ]);
  });

  it('works in the minor unit of any currency: JPY and KWD remainders stay exact', () => {
    const yen = planBurnDown(
      invoice({ currency: 'JPY', balance: '1234.00000000' }),
      [grant('y', { currency: 'JPY', remaining: '1000.00000000' })],
      at,
    );
    expect(yen).toEqual([{ credit_grant_id: 'y', amount: '1000.00000000', remaining_after: '0.00000000' }]);
    const dinar = planBurnDown(
      invoice({ currency: 'KWD', balance: '1.23400000' }),
      [grant('k', { currency: 'KWD', remaining: '5.00000000' })],
      at,
    );
    expect(dinar).toEqual([{ credit_grant_id: 'k', amount: '1.23400000', remaining_after: '3.76600000' }]);
  });
});

describe('planBurnDowns', () => {
  it('each invoice sees what the ones before it left; never a cent twice', () => {
    const grants = [
      grant('a', { remaining: '120.00000000' }),
      grant('b', { remaining: '50.00000000', priority: 60 }),
    ];
    const uses = planBurnDowns(
      [
        invoice({ balance: '100.00000000' }),
        invoice({ balance: '100.00000000' }),
        invoice({ balance: '100.00000000' }),
      ],
      grants,
      at,
    );
    expect(uses.map(pairs)).toEqual([
      [['a', '100.00000000']],
      [
        ['a', '20.00000000'],
        ['b', '50.00000000'],
      ],
      [],
    ]);
    expect(uses.map(totalUsed)).toEqual(['100.00000000', '70.00000000', '0.00000000']);
    // the input grants are not changed
    expect(grants[0]!.remaining).toBe('120.00000000');
  });
});
