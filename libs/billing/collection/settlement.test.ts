import { describe, expect, it } from 'vitest';
import { isPayable, settleOnPosting, statusAfterRefund, statusForAmountPaid } from './settlement.js';

describe('invoice settlement', () => {
  it('derives the collectible status from the amount paid', () => {
    expect(statusForAmountPaid(100n, 0n)).toBe('POSTED');
    expect(statusForAmountPaid(100n, 1n)).toBe('PARTIALLY_PAID');
    expect(statusForAmountPaid(100n, 100n)).toBe('PAID');
    expect(statusForAmountPaid(0n, 0n)).toBe('PAID');
  });

  it('consumes credit up to the total when posting', () => {
    expect(settleOnPosting('100.00000000', '0.00000000')).toEqual({
      credit_applied: '0.00000000',
      status: 'POSTED',
    });
    expect(settleOnPosting('100.00000000', '30.00000000')).toEqual({
      credit_applied: '30.00000000',
      status: 'PARTIALLY_PAID',
    });
    expect(settleOnPosting('100.00000000', '250.00000000')).toEqual({
      credit_applied: '100.00000000',
      status: 'PAID',
    });
    expect(settleOnPosting('0.00000000', '5.00000000')).toEqual({
      credit_applied: '0.00000000',
      status: 'PAID',
    });
  });

  it('takes money on an issued invoice with a balance, refunded or not; never on one without', () => {
    for (const status of ['POSTED', 'PARTIALLY_PAID', 'PARTIALLY_REFUNDED', 'REFUNDED'] as const) {
      expect(isPayable(status, 1n), status).toBe(true);
      expect(isPayable(status, 0n), status).toBe(false);
    }
    for (const status of ['DRAFT', 'WITHDRAWN', 'PAID'] as const)
      expect(isPayable(status, 1n), status).toBe(false);
  });

  it('is REFUNDED once nothing refundable is left', () => {
    expect(statusAfterRefund(0n)).toBe('REFUNDED');
    expect(statusAfterRefund(1n)).toBe('PARTIALLY_REFUNDED');
  });
});
