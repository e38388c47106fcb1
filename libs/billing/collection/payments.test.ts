import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import { parseMoney } from '../../money/index.js';
import type { InvoiceStatus } from '../../schemas/index.js';
import type { LockedInvoice } from './invoice-operations.js';
import { planCreditMemo } from './payments.js';

/*
 * The checks money applied to an invoice goes through (planCreditMemo shares them with payments),
 * without a database: docs/architecture.md, "Rules of the contract", and docs/decisions.md,
 * "Payable amounts".
 */

const held = (over: Partial<LockedInvoice> = {}): LockedInvoice => ({
  id: '00000000-0000-4000-8000-000000000001',
  org_id: 1,
  customer_id: 2,
  subscription_id: 3,
  invoice_number: 'INV-000042',
  status: 'POSTED',
  total: '105.00000000',
  amount_paid: '0.00000000',
  amount_refunded: '0.00000000',
  currency: 'CAD',
  ...over,
});

const refusal = (invoice: LockedInvoice, amount: string): ApiError => {
  try {
    planCreditMemo(invoice, parseMoney(amount));
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    return error as ApiError;
  }
  throw new Error(`${amount} was taken`);
};

describe('money applied to an invoice', () => {
  it('takes the exact balance (PAID), one minor unit less (PARTIALLY_PAID), never one more', () => {
    expect(planCreditMemo(held(), parseMoney('105'))).toEqual({ status: 'PAID', amountPaid: '105.00000000' });
    expect(planCreditMemo(held(), parseMoney('104.99'))).toEqual({
      status: 'PARTIALLY_PAID',
      amountPaid: '104.99000000',
    });
    const over = refusal(held(), '105.01');
    expect(over.code).toBe('VALIDATION_ERROR');
    expect(over.message).toBe('A credit memo of 105.01000000 exceeds the balance of 105.00000000 CAD.');
    expect(over.details).toEqual([
      {
        field: 'amount',
        message: 'Exceeds the balance of invoice INV-000042 (105.00000000 CAD).',
        code: 'out_of_range',
      },
    ]);
  });

  it('counts what was paid before: the balance is total - amount_paid', () => {
    const partly = held({ status: 'PARTIALLY_PAID', amount_paid: '40.00000000' });
    expect(planCreditMemo(partly, parseMoney('65'))).toEqual({ status: 'PAID', amountPaid: '105.00000000' });
    expect(planCreditMemo(partly, parseMoney('5'))).toEqual({
      status: 'PARTIALLY_PAID',
      amountPaid: '45.00000000',
    });
    expect(refusal(partly, '65.01').details?.[0]?.message).toBe(
      'Exceeds the balance of invoice INV-000042 (65.00000000 CAD).',
    );
  });

  it('a refunded invoice with a balance moves by what is paid: PARTIALLY_PAID, then PAID', () => {
    const refunded = held({ status: 'REFUNDED', amount_paid: '50.00000000', amount_refunded: '50.00000000' });
    expect(planCreditMemo(refunded, parseMoney('55'))).toEqual({
      status: 'PAID',
      amountPaid: '105.00000000',
    });
    expect(planCreditMemo(refunded, parseMoney('1')).status).toBe('PARTIALLY_PAID');
    const part = held({ status: 'PARTIALLY_REFUNDED', amount_paid: '60.00000000' });
    expect(planCreditMemo(part, parseMoney('45')).status).toBe('PAID');
  });

  it('in a currency with no decimals or three, whole minor units or the exact balance', () => {
    const yen = held({ total: '1200.00000000', currency: 'JPY' });
    expect(planCreditMemo(yen, parseMoney('1199'))).toEqual({
      status: 'PARTIALLY_PAID',
      amountPaid: '1199.00000000',
    });
    expect(refusal(yen, '0.5').details).toEqual([
      { field: 'amount', message: 'Must be in whole JPY minor units (no decimals).', code: 'invalid_format' },
    ]);
    const dinar = held({ total: '10.000', amount_paid: '9.000', status: 'PARTIALLY_PAID', currency: 'KWD' });
    expect(planCreditMemo(dinar, parseMoney('0.001')).amountPaid).toBe('9.00100000');
    expect(refusal(dinar, '0.0005').details?.[0]?.code).toBe('invalid_format');
    // an invoice issued before the rule may owe below the minor unit: that exact balance is taken
    const old = held({ total: '1200.5', currency: 'JPY' });
    expect(planCreditMemo(old, parseMoney('1200.5'))).toEqual({
      status: 'PAID',
      amountPaid: '1200.50000000',
    });
    expect(refusal(old, '1200.4').details?.[0]?.code).toBe('invalid_format');
  });

  it('takes the exact sub-minor-unit balance left after a part payment, not the exact total', () => {
    // 105.005 owed, 100.00 paid: the 5.005 left is the exact balance, so it settles the invoice
    const old = held({ status: 'PARTIALLY_PAID', total: '105.00500000', amount_paid: '100.00000000' });
    expect(planCreditMemo(old, parseMoney('5.005'))).toEqual({ status: 'PAID', amountPaid: '105.00500000' });
    expect(refusal(old, '5.004').details?.[0]?.code).toBe('invalid_format');
  });

  it('refuses an invoice that is not payable, saying why', () => {
    const paid = refusal(held({ status: 'PAID', amount_paid: '105.00000000' }), '1');
    expect(paid.code).toBe('CONFLICT');
    expect(paid.message).toBe(
      'Invoice INV-000042 is PAID: a credit memo can only be applied to a POSTED or PARTIALLY_PAID invoice, or a refunded one with a balance left.',
    );
    const settled = refusal(held({ status: 'REFUNDED', amount_paid: '105.00000000' }), '1');
    expect(settled.message).toMatch(/^Invoice INV-000042 is REFUNDED with no balance left: a credit memo/);
    expect(refusal(held({ status: 'DRAFT' }), '1').message).toMatch(/is DRAFT: .* \(post it first\)\.$/);
    for (const status of ['WITHDRAWN', 'PAID'] as InvoiceStatus[]) {
      expect(refusal(held({ status }), '1').code, status).toBe('CONFLICT');
    }
    // nothing owed on a POSTED invoice (a zero total): nothing to apply
    expect(refusal(held({ total: '0.00000000' }), '1').message).toMatch(/is POSTED with no balance left/);
    // nothing applied (a caller's zero) would leave it POSTED: not a move the invoice may make
    expect(refusal(held(), '0').message).toBe(
      'Invoice INV-000042 is POSTED and cannot become POSTED (from POSTED it may become PARTIALLY_PAID or PAID or WITHDRAWN).',
    );
  });
});
