import { describe, expect, it } from 'vitest';
import { seats } from '../item-set/item-set-fixtures.js';
import { composePeriodInvoice, type PeriodInvoiceInput } from './period-invoice.js';

/*
 * The invoice is dated on its period's end (or on the day billing stops, for an immediate cancel)
 * and taxed with the rules of that day (docs/decisions.md, "Billing is in arrears, in UTC"). Nova
 * Scotia's HST went from 15 % to 14 % on 2025-04-01 (libs/billing/tax).
 */

const seat = seats(1, { unit_price: '100.00000000' });

function compose(period: [string, string], endsAt?: string, currency = 'CAD') {
  const input: PeriodInvoiceInput = {
    items: [seat],
    currency,
    usage: new Map(),
    firstPeriod: false,
    periodStart: new Date(period[0]),
    periodEnd: new Date(period[1]),
    prorationLines: [],
    customer: { country: 'CA', state_province: 'NS', tax_exempt: false },
    endsAt: endsAt === undefined ? undefined : new Date(endsAt),
  };
  const invoice = composePeriodInvoice(input);
  return { invoice_date: invoice.invoice_date, tax_amount: invoice.tax_amount };
}

describe('composePeriodInvoice', () => {
  it("is dated on the period's end and taxed with that day's rules", () => {
    // March 2025 ends Apr 1: 14 %, though the period began under 15 %
    expect(compose(['2025-03-01T00:00:00Z', '2025-04-01T00:00:00Z'])).toEqual({
      invoice_date: '2025-04-01',
      tax_amount: '14.00000000',
    });
    expect(compose(['2025-02-01T00:00:00Z', '2025-03-01T00:00:00Z'])).toEqual({
      invoice_date: '2025-03-01',
      tax_amount: '15.00000000',
    });
  });

  it("stopped early (a cancel now): dated on the day it stops, taxed with that day's rules", () => {
    expect(compose(['2025-03-15T00:00:00Z', '2025-04-15T00:00:00Z'], '2025-03-20T15:30:00Z')).toEqual({
      invoice_date: '2025-03-20',
      tax_amount: '15.00000000',
    });
    expect(compose(['2025-03-15T00:00:00Z', '2025-04-15T00:00:00Z'])).toEqual({
      invoice_date: '2025-04-15',
      tax_amount: '14.00000000',
    });
  });

  it('bills only the items on in the period, and no tax to an exempt customer', () => {
    const input: PeriodInvoiceInput = {
      items: [seat, seats(2, { subscription_item_id: 2, removed_at: new Date('2025-03-01T00:00:00Z') })],
      currency: 'CAD',
      usage: new Map(),
      firstPeriod: false,
      periodStart: new Date('2025-03-01T00:00:00Z'),
      periodEnd: new Date('2025-04-01T00:00:00Z'),
      prorationLines: [],
      customer: { country: 'CA', state_province: 'NS', tax_exempt: false },
    };
    // the item removed at the period's start is not billed in it
    expect(composePeriodInvoice(input)).toMatchObject({
      subtotal: '100.00000000',
      tax_amount: '14.00000000',
    });
    const exempt = composePeriodInvoice({ ...input, customer: { ...input.customer, tax_exempt: true } });
    expect(exempt).toMatchObject({
      subtotal: '100.00000000',
      tax_amount: '0.00000000',
      total: '100.00000000',
    });
    expect(exempt.lines.map((line) => line.tax_type)).toEqual(['EXEMPT']);
  });

  it('takes a currency code padded with blanks (a fixed-width column) as the code itself', () => {
    expect(compose(['2025-02-01T00:00:00Z', '2025-03-01T00:00:00Z'], undefined, 'CAD ')).toEqual({
      invoice_date: '2025-03-01',
      tax_amount: '15.00000000',
    });
  });
});
