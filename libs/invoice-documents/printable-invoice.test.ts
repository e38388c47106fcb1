import { describe, expect, it } from 'vitest';
import type { Customer, InvoiceRecord as Invoice } from '../schemas/index.js';
import { type InvoiceItem, sampleInvoice, sampleItem } from './document-fixtures.js';
import { amountDueOf, customerParty, taxLinesOf } from './printable-invoice.js';

type Item = InvoiceItem;

const item = (over: Partial<Item>): Item =>
  sampleItem({
    unit_price: '100.00000000',
    line_total_pre_tax: '100.00000000',
    tax_amount: '0.00000000',
    tax_type: null,
    ...over,
  });

const invoiceOf = (items: Item[], currency = 'CAD'): Invoice =>
  sampleInvoice({
    total: '0.00000000',
    balance: '0.00000000',
    tax_amount: '0.00000000',
    currency,
    items,
  });

describe('taxLinesOf, the tax rows under the subtotal', () => {
  it('names US sales tax "Sales tax" and a tax of no known type "Tax", after the Canadian ones', () => {
    const lines = taxLinesOf(
      invoiceOf([
        item({ id: 1, tax_type: null, tax_amount: '1.00000000' }),
        item({ id: 2, tax_type: 'US_SALES_TAX', tax_amount: '8.87500000' }),
        item({ id: 3, tax_type: 'HST', tax_amount: '13.00000000' }),
      ]),
    );
    expect(lines).toEqual([
      { name: 'HST', amount: '13.00000000' },
      { name: 'Sales tax', amount: '8.87500000' },
      { name: 'Tax', amount: '1.00000000' },
    ]);
  });

  it('prints no "Tax" row for an exempt or untyped item that levies nothing', () => {
    expect(
      taxLinesOf(
        invoiceOf([
          item({ id: 1, tax_type: null }),
          item({ id: 2, tax_type: 'EXEMPT' as Item['tax_type'] }),
          item({ id: 3, tax_type: 'US_SALES_TAX', tax_amount: '4.00000000' }),
        ]),
      ),
    ).toEqual([{ name: 'Sales tax', amount: '4.00000000' }]);
  });

  it('splits line by line an invoice whose line totals are not in cents, though its tax is', () => {
    // GST of 0.105 is 0.00525 exactly; on the subtotal, in cents, it would be 0.01
    expect(
      taxLinesOf(
        invoiceOf([
          item({ tax_type: 'GST_QST', line_total_pre_tax: '0.10500000', tax_amount: '0.02000000' }),
        ]),
      ),
    ).toEqual([
      { name: 'GST', amount: '0.00525000' },
      { name: 'QST', amount: '0.01475000' },
    ]);
  });

  it('computes GST once on the subtotal of all the split lines of a payable invoice', () => {
    // 100 + 50.10 = 150.10: GST 7.505 rounds half-up to 7.51; the QST is the rest of the tax
    expect(
      taxLinesOf(
        invoiceOf([
          item({ id: 1, tax_type: 'GST_QST', tax_amount: '14.98000000' }),
          item({ id: 2, tax_type: 'GST_QST', line_total_pre_tax: '50.10000000', tax_amount: '7.50000000' }),
        ]),
      ),
    ).toEqual([
      { name: 'GST', amount: '7.51000000' },
      { name: 'QST', amount: '14.97000000' },
    ]);
  });

  it('has no tax row for an invoice without items', () => {
    expect(taxLinesOf(invoiceOf([]))).toEqual([]);
  });

  it('splits line by line an invoice of which only some lines are in cents', () => {
    // line by line: GST 0.005 + 5 = 5.005; on the 100.10 subtotal, in cents, it would be 5.01
    expect(
      taxLinesOf(
        invoiceOf([
          item({ id: 1, tax_type: 'GST_QST', line_total_pre_tax: '0.10000000', tax_amount: '0.01497500' }),
          item({ id: 2, tax_type: 'GST_QST', tax_amount: '14.98000000' }),
        ]),
      ),
    ).toEqual([
      { name: 'GST', amount: '5.00500000' },
      { name: 'QST', amount: '9.98997500' },
    ]);
  });

  it('splits line by line an invoice in a currency without a known minor unit, without failing', () => {
    expect(
      taxLinesOf(
        invoiceOf(
          [
            item({ id: 1, tax_type: 'GST_PST', tax_amount: '12.00000000' }),
            item({ id: 2, tax_type: 'GST_PST', tax_amount: '12.00000000' }),
          ],
          'XTS',
        ),
      ),
    ).toEqual([
      { name: 'GST', amount: '10.00000000' },
      { name: 'PST', amount: '14.00000000' },
    ]);
  });
});

describe('customerParty', () => {
  it("prints the customer's name, contact, address, e-mail and tax id, each from its own field", () => {
    const customer = {
      name: 'Buyer Inc',
      contact_name: 'Jo Ng',
      email: 'ap@buyer.example',
      tax_id: 'QC-99',
      address_line1: '2 Side St',
      address_line2: null,
      city: 'Montréal',
      state_province: 'QC',
      postal_code: 'H2X 1Y4',
      country: 'CA',
    } as Customer;
    expect(customerParty(customer, 'fr-CA')).toEqual({
      name: 'Buyer Inc',
      contactName: 'Jo Ng',
      addressLines: ['2 Side St', 'Montréal, QC  H2X 1Y4', 'Canada'],
      email: 'ap@buyer.example',
      taxId: 'QC-99',
    });
    expect(customerParty({ ...customer, country: 'US' }, 'fr-CA').addressLines.at(-1)).toBe('États-Unis');
  });
});

describe('amountDueOf a balance below zero', () => {
  it('asks nothing of a customer who paid more than the total', () => {
    expect(amountDueOf({ status: 'POSTED', balance: '-5.00000000' })).toBe('0.00000000');
    expect(amountDueOf({ status: 'PARTIALLY_PAID', balance: '-0.01000000' })).toBe('0.00000000');
  });
});
