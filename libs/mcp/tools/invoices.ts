import { z } from 'zod';
import { isOverdue, listInvoices } from '../../invoices/index.js';
import { integerId } from '../../schemas/index.js';
import { recentPayments } from '../read-models/payments.js';
import { defineTool, toolLimit } from './tool.js';

/** The statuses an assistant filters on (spec: MCP endpoint). */
const LISTABLE_STATUSES = ['POSTED', 'PARTIALLY_PAID', 'PAID'] as const;

export const listInvoicesTool = defineTool({
  name: 'list_invoices',
  title: 'Invoices',
  description:
    'Invoices newest first, optionally only one status (POSTED, PARTIALLY_PAID or PAID) or one ' +
    'customer. Amounts are exact decimal strings in the invoice currency; balance = total - amount_paid; ' +
    'overdue = POSTED or PARTIALLY_PAID, due date passed, balance > 0.',
  input: z.strictObject({
    status: z.enum(LISTABLE_STATUSES).optional().describe('Only invoices in this status.'),
    customer_id: integerId.optional().describe("Only this customer's invoices."),
    limit: toolLimit,
  }),
  async run({ status, customer_id, limit }, { db, orgId, today }) {
    const { data, total } = await listInvoices(
      db,
      orgId,
      { status, customerId: customer_id },
      { limit, offset: 0 },
    );
    return {
      total,
      returned: data.length,
      invoices: data.map((invoice) => ({
        id: invoice.id,
        invoice_number: invoice.invoice_number,
        customer_id: invoice.customer_id,
        subscription_id: invoice.subscription_id,
        status: invoice.status,
        overdue: isOverdue(invoice, today),
        invoice_date: invoice.invoice_date,
        due_date: invoice.due_date,
        currency: invoice.currency,
        total: invoice.total,
        tax_amount: invoice.tax_amount,
        amount_paid: invoice.amount_paid,
        balance: invoice.balance,
        item_count: invoice.items.length,
      })),
    };
  },
});

export const recentPaymentsTool = defineTool({
  name: 'recent_payments',
  title: 'Recent payments',
  description:
    'Payments recorded against any invoice, newest first, with the invoice number, the customer, ' +
    'the amount (exact decimal string, invoice currency), method and status. Credit memos and refunds are not listed.',
  input: z.strictObject({ limit: toolLimit }),
  async run({ limit }, { db, orgId }) {
    const payments = await recentPayments(db, orgId, limit);
    return { returned: payments.length, payments };
  },
});
