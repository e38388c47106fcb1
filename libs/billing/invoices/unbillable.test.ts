import { describe, expect, it } from 'vitest';
import { ApiError } from '../../errors/index.js';
import type { BillableItem } from '../pricing/index.js';
import { InvoiceLimitError } from './invoice-limits.js';
import { composePeriodInvoice, type PeriodInvoiceInput } from './period-invoice.js';
import { composing, UnbillableError } from './unbillable.js';

function input(
  overrides: Partial<PeriodInvoiceInput> & { item?: Partial<BillableItem> },
): PeriodInvoiceInput {
  const { item, ...rest } = overrides;
  return {
    items: [
      {
        subscription_item_id: 1,
        product_id: 10,
        product_name: 'Seats',
        unit_label: 'seat',
        currency: rest.currency ?? 'CAD',
        pricing_type: 'recurring',
        usage_type: 'licensed',
        quantity: 2,
        unit_price: '10.00000000',
        included_units: '0.00000000',
        pricing: { pricing_model: 'per_unit', pricing_scheme: 'linear', pricing_mode: null, tiers: [] },
        ...item,
      },
    ],
    currency: 'CAD',
    usage: new Map(),
    firstPeriod: false,
    periodStart: new Date('2026-03-01T00:00:00Z'),
    periodEnd: new Date('2026-04-01T00:00:00Z'),
    prorationLines: [],
    customer: { country: 'CA', state_province: 'ON', tax_exempt: false },
    ...rest,
  };
}

/** What `fn` throws. */
function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('nothing was thrown');
}

describe('what retrying cannot fix', () => {
  it('a currency without a known minor unit is unbillable, with the reason the run parks under', () => {
    for (const currency of ['XYZ', 'CLF']) {
      const error = thrown(() => composePeriodInvoice(input({ currency })));
      expect(error).toBeInstanceOf(UnbillableError);
      expect(error).toMatchObject({
        status: 409,
        reason: `its currency ${currency} has no known minor unit, so nothing can be billed in it`,
      });
    }
    expect(composePeriodInvoice(input({ currency: 'CAD' })).total).toBe('22.60000000');
  });

  it('a fault of the stored price (a tiered price without tiers or mode) is unbillable too', () => {
    const noTiers = thrown(() =>
      composePeriodInvoice(
        input({
          item: {
            pricing: {
              pricing_model: 'per_unit',
              pricing_scheme: 'tiered',
              pricing_mode: 'volume',
              tiers: [],
            },
          },
        }),
      ),
    );
    expect(noTiers).toMatchObject({ reason: 'a tiered price needs at least one tier' });
    expect(noTiers).toBeInstanceOf(UnbillableError);
    const noMode = thrown(() =>
      composePeriodInvoice(
        input({
          item: {
            pricing: {
              pricing_model: 'per_unit',
              pricing_scheme: 'tiered',
              pricing_mode: null,
              tiers: [{ up_to: null, unit_price: '1', flat_fee: '0' }],
            },
          },
        }),
      ),
    );
    expect(noMode).toBeInstanceOf(UnbillableError);
    const otherCurrency = thrown(() =>
      composePeriodInvoice(input({ currency: 'USD', item: { currency: 'CAD' } })),
    );
    expect(otherCurrency).toBeInstanceOf(UnbillableError);
  });

  it('an amount beyond an invoice is one of them; a bug is not', () => {
    expect(new InvoiceLimitError('too much')).toBeInstanceOf(UnbillableError);
    expect(new InvoiceLimitError('too much')).toBeInstanceOf(ApiError);
    const bug = thrown(() =>
      composing(() => {
        throw new TypeError('x is undefined');
      }),
    );
    expect(bug).toBeInstanceOf(TypeError);
    expect(bug).not.toBeInstanceOf(ApiError);
    const refusal = ApiError.validation([]);
    expect(
      thrown(() =>
        composing(() => {
          throw refusal;
        }),
      ),
    ).toBe(refusal);
  });
});
