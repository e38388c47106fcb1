import { z } from 'zod';
import { inputDate } from '../../schemas/index.js';
import { revenueSummary } from '../read-models/revenue-summary.js';
import { defineTool } from './tool.js';

export const revenueSummaryTool = defineTool({
  name: 'revenue_summary',
  title: 'Revenue summary',
  description:
    'Per currency, over invoices issued (not DRAFT or WITHDRAWN) with an invoice date in [from, to] ' +
    '(both optional, inclusive; none = all time): billed (sum of totals), tax, paid, refunded, ' +
    'outstanding (open balance of POSTED and PARTIALLY_PAID invoices), overdue count and amount ' +
    '(open, due date before today UTC, balance > 0), and active subscriptions now. Amounts are exact ' +
    "decimal strings, each sum rounded half-up to the currency's minor unit.",
  input: z
    .strictObject({
      from: inputDate.optional().describe('First invoice date included, YYYY-MM-DD.'),
      to: inputDate.optional().describe('Last invoice date included, YYYY-MM-DD.'),
    })
    .refine((range) => !range.from || !range.to || range.from <= range.to, {
      message: '"from" must not be after "to".',
      path: ['from'],
    }),
  run: ({ from, to }, { db, orgId, today }) => revenueSummary(db, orgId, { from, to, asOf: today }),
});
