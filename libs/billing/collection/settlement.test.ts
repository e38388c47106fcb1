import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import { parseMoney } from '../../money/index.js';
import {
  assertPayableAmount,
  isPayable,
  settleOnPosting,
  statusAfterRefund,
  statusForAmountPaid,
} from './settlement.js';

describe('invoice settlement', () => {
  it('derives the collectible status from the amount paid', () => {
    expect(statusForAmountPaid(100n, 0n)).toBe('POSTED');
    expect(statusForAmountPaid(100n, 1n)).toBe('PARTIALLY_PAID');
    expect(statusForAmountPaid(100n, 100n)).toBe('PAID');
    expect(statusForAmountPaid(0n, 0n)).toBe('PAID');
    // one minor unit short is still partly paid; more than the total (never taken) would be paid
    expect(statusForAmountPaid(100n, 99n)).toBe('PARTIALLY_PAID');
    expect(statusForAmountPaid(100n, 101n)).toBe('PAID');
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
    // credit of exactly the total settles it; a negative balance (an overdrawn customer) takes nothing
    expect(settleOnPosting('100.00000000', '100.00000000')).toEqual({
      credit_applied: '100.00000000',
      status: 'PAID',
    });
    expect(settleOnPosting('100.00000000', '-5.00000000')).toEqual({
      credit_applied: '0.00000000',
      status: 'POSTED',
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
      expect(isPayable(status, -1n), status).toBe(false);
    }
    for (const status of ['DRAFT', 'WITHDRAWN', 'PAID'] as const)
      expect(isPayable(status, 1n), status).toBe(false);
  });

  it('is REFUNDED once nothing refundable is left', () => {
    expect(statusAfterRefund(0n)).toBe('REFUNDED');
    expect(statusAfterRefund(1n)).toBe('PARTIALLY_REFUNDED');
    expect(statusAfterRefund(-1n)).toBe('REFUNDED');
  });
  it("takes money in whole minor units of the invoice's currency, or the exact balance", () => {
    // docs/decisions.md, "Payable amounts": payments, credits and refunds are checked as typed
    const refusal = (amount: string, currency: string, exact?: string) => {
      try {
        assertPayableAmount(
          'amount',
          parseMoney(amount),
          currency,
          exact === undefined ? undefined : parseMoney(exact),
        );
        return undefined;
      } catch (error) {
        expect(error).toBeInstanceOf(ApiError);
        return (error as ApiError).details?.[0];
      }
    };
    expect(refusal('10.01', 'CAD')).toBeUndefined();
    expect(refusal('10.005', 'CAD')).toEqual({
      field: 'amount',
      message: 'Must be in whole CAD minor units (at most 2 decimals).',
      code: 'invalid_format',
    });
    expect(refusal('1200', 'JPY')).toBeUndefined();
    expect(refusal('1200.5', 'JPY')?.message).toBe('Must be in whole JPY minor units (no decimals).');
    expect(refusal('1.001', 'KWD')).toBeUndefined();
    expect(refusal('1.0005', 'KWD')?.message).toBe('Must be in whole KWD minor units (at most 3 decimals).');
    // an invoice issued before the rule may owe below a cent: its exact balance is taken, nothing else
    expect(refusal('10.005', 'CAD', '10.005')).toBeUndefined();
    expect(refusal('10.004', 'CAD', '10.005')?.field).toBe('amount');
    // a currency without a known minor unit (stored before currencies were checked) takes it as typed
    expect(refusal('10.005', 'XYZ')).toBeUndefined();
    // the field refused is the one given (a top-up's threshold or target, not always amount)
    expect(() => assertPayableAmount('threshold', parseMoney('0.5'), 'JPY', parseMoney('0.4'))).toThrow(
      expect.objectContaining({
        details: [
          {
            field: 'threshold',
            message: 'Must be in whole JPY minor units (no decimals).',
            code: 'invalid_format',
          },
        ],
      }),
    );
    expect(refusal('0.5', 'JPY', '0.5')).toBeUndefined();
    expect(refusal('0.0001', 'KWD', '0.0001')).toBeUndefined();
  });
});
