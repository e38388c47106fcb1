import type { InvoiceRecord as Invoice } from '../schemas/index.js';
import type { PrintableCreditNote } from './printable-credit-note.js';

/**
 * Builders for the printable documents' unit tests: a POSTED CAD invoice of March 2026 with one
 * taxed line (49.99 of seats, 7.50 of GST + QST, 57.49 in all, nothing paid yet).
 */

export type InvoiceItem = Invoice['items'][number];

export function sampleItem(overrides: Partial<InvoiceItem> = {}): InvoiceItem {
  return {
    id: 1,
    product_id: 2,
    description: 'Seats',
    quantity: '1.0000',
    unit_price: '49.99000000',
    line_total_pre_tax: '49.99000000',
    tax_amount: '7.50000000',
    tax_type: 'GST_QST',
    ...overrides,
  };
}

export function sampleInvoice(overrides: Partial<Invoice> = {}): Invoice {
  return {
    id: '7d1f4a0e-2b9c-4c55-9d0e-1a2b3c4d5e6f',
    object: 'invoice',
    invoice_number: 'INV-000042',
    customer_id: 7,
    subscription_id: 3,
    invoice_date: '2026-03-01',
    period_start: '2026-03-01',
    period_end: '2026-03-31',
    due_date: '2026-03-31',
    status: 'POSTED',
    total: '57.49000000',
    amount_paid: '0.00000000',
    amount_refunded: '0.00000000',
    balance: '57.49000000',
    tax_amount: '7.50000000',
    currency: 'CAD',
    items: [sampleItem()],
    created_at: '2026-03-01T00:00:00.000Z',
    updated_at: '2026-03-01T00:00:00.000Z',
    ...overrides,
  };
}

/**
 * A credit note of 10.50 USD (10.00 and 0.50 of New York sales tax) against that invoice, all of
 * it applied to the invoice, printed in `locale`.
 */
export function sampleCreditNote(
  overrides: Partial<PrintableCreditNote['note']> = {},
  locale: 'en' | 'fr-CA' = 'en',
): PrintableCreditNote {
  return {
    locale,
    note: {
      id: '9c1f4a0e-2b9c-4c55-9d0e-1a2b3c4d5e6f',
      object: 'credit_note',
      number: 'CN-000003',
      invoice_id: '7d1f4a0e-2b9c-4c55-9d0e-1a2b3c4d5e6f',
      customer_id: 7,
      currency: 'USD',
      reason: 'order_change',
      memo: null,
      lines: [{ invoice_item_id: 1, description: 'Seats', amount: '10.00000000', tax_amount: '0.50000000' }],
      subtotal: '10.00000000',
      tax: '0.50000000',
      tax_lines: [{ name: 'STATE_SALES_TAX', jurisdiction: 'NY', rate: '0.05', amount: '0.50000000' }],
      total: '10.50000000',
      applied_to_invoice: '10.50000000',
      credited_to_customer: '0.00000000',
      credit_grant_id: null,
      usage_event_id: null,
      created_at: '2026-04-09T23:30:00.000Z',
      ...overrides,
    },
    invoice: { invoice_number: 'INV-000042', invoice_date: '2026-03-01' },
    seller: { name: 'Seller', contactName: null, addressLines: [], email: null, taxId: null },
    customer: { name: 'Buyer', contactName: null, addressLines: [], email: null, taxId: null },
  };
}
