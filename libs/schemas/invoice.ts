import { z } from 'zod';
import { date, dateTime, integerId, money, quantity4, uuid } from './primitives.js';

export const INVOICE_STATUSES = [
  'DRAFT',
  'POSTED',
  'PAID',
  'PARTIALLY_PAID',
  'WITHDRAWN',
  'REFUNDED',
  'PARTIALLY_REFUNDED',
] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

export const TAX_TYPES = ['GST', 'HST', 'GST_QST', 'GST_PST', 'US_SALES_TAX', 'EXEMPT'] as const;
export type TaxType = (typeof TAX_TYPES)[number];

export const InvoiceItem = z
  .object({
    id: integerId,
    product_id: integerId.nullable().meta({ description: 'null on a Prepaid credits invoice.' }),
    description: z.string(),
    quantity: quantity4,
    unit_price: money,
    line_total_pre_tax: money,
    tax_amount: money,
    tax_type: z.enum(TAX_TYPES).nullable(),
  })
  .meta({ id: 'PublicInvoiceItem' });
export type InvoiceItem = z.output<typeof InvoiceItem>;

/** An invoice as stored: what billing, documents and MCP read. */
export const InvoiceRecord = z.object({
  id: uuid,
  object: z.literal('invoice'),
  invoice_number: z.string(),
  customer_id: integerId,
  subscription_id: integerId.nullable().meta({
    description: 'null for a Prepaid credits invoice (a paid credit grant), which has no subscription.',
  }),
  invoice_date: date,
  period_start: date,
  period_end: date,
  due_date: date,
  status: z.enum(INVOICE_STATUSES),
  total: money,
  amount_paid: money,
  amount_refunded: money,
  balance: money.meta({ description: 'total minus amount_paid; refunds are not subtracted.' }),
  tax_amount: money,
  currency: z.string(),
  items: z.array(InvoiceItem),
  created_at: dateTime,
  updated_at: dateTime,
});
export type InvoiceRecord = z.output<typeof InvoiceRecord>;

/** The public invoice: the record and the link its customer can open without a key. */
export const Invoice = InvoiceRecord.extend({
  hosted_url: z.url().meta({
    description:
      "The invoice's own page for its customer (view, printable HTML, PDF), opened without an API key. " +
      'Valid until 90 days after the invoice is paid, withdrawn or refunded.',
  }),
}).meta({ id: 'PublicInvoice' });
export type Invoice = z.output<typeof Invoice>;

export const TRANSACTION_TYPES = ['PAYMENT', 'CREDIT_MEMO', 'REFUND'] as const;
export const TRANSACTION_METHODS = ['CARD', 'BANK_TRANSFER', 'STRIPE', 'PAYPAL', 'EXTERNAL'] as const;
export const TRANSACTION_STATUSES = ['PENDING', 'COMPLETED', 'FAILED', 'REFUNDED'] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
export type TransactionMethod = (typeof TRANSACTION_METHODS)[number];
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export const InvoiceTransaction = z
  .object({
    id: uuid,
    object: z.literal('invoice_transaction'),
    invoice_id: uuid,
    type: z.enum(TRANSACTION_TYPES).meta({ description: 'REFUND is a legacy type.' }),
    amount: money,
    method: z.enum(TRANSACTION_METHODS),
    status: z.enum(TRANSACTION_STATUSES),
    reference: z.string().nullable(),
    note: z.string().nullable(),
    credit_grant_id: uuid.nullable().meta({ description: 'The credit grant a CREDIT_MEMO used; else null.' }),
    created_at: dateTime,
  })
  .meta({ id: 'PublicInvoiceTransaction' });
export type InvoiceTransaction = z.output<typeof InvoiceTransaction>;
