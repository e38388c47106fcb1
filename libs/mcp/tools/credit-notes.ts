import { z } from 'zod';
import { listCreditNotes } from '../../billing/index.js';
import { integerId, uuidInput } from '../../schemas/index.js';
import { defineTool, toolLimit } from './tool.js';

export const listCreditNotesTool = defineTool({
  name: 'list_credit_notes',
  title: 'Credit notes',
  description:
    "The organization's credit notes, newest first, optionally of one invoice or one customer: each with its number " +
    '(CN-000001), reason, lines (invoice item, amount before tax, tax), subtotal, tax by component, total, and how it ' +
    'was applied (applied_to_invoice as a credit memo, credited_to_customer as a credit grant). Same figures as ' +
    'GET /invoices/{id}/credit-notes and GET /credit-notes/{id}.',
  input: z.strictObject({
    invoice_id: uuidInput.optional().describe('Only the notes of this invoice (a UUID).'),
    customer_id: integerId.optional().describe('Only the notes of this customer (an integer).'),
    limit: toolLimit,
  }),
  async run({ invoice_id, customer_id, limit }, { db, orgId }) {
    const { data, total } = await listCreditNotes(
      db,
      orgId,
      { invoiceId: invoice_id, customerId: customer_id },
      { limit, offset: 0 },
    );
    return { total, credit_notes: data };
  },
});
