import { z } from 'zod';
import { getSubscriptionUsage, previewUpcomingInvoice } from '../../billing/index.js';
import { integerId } from '../../schemas/index.js';
import type { UsageReadStores } from '../../usage/index.js';
import { defineTool } from './tool.js';

export function storesOf(usage: UsageReadStores | undefined): UsageReadStores {
  if (!usage) throw new Error('the MCP server was built without the usage read stores');
  return usage;
}

export const getSubscriptionUsageTool = defineTool({
  name: 'get_subscription_usage',
  title: "A subscription's usage this period",
  description:
    'Per metered item of one subscription: the quantity used in the current (or previous) period, the included ' +
    'units, the billable quantity and the amount the billing run would charge for it now (before tax), with ' +
    'as_of (every event accepted before it is counted). Same figures as GET /subscriptions/{id}/usage.',
  input: z.strictObject({
    subscription_id: integerId.describe('The subscription id (an integer).'),
    period: z
      .enum(['current', 'previous'])
      .default('current')
      .describe('current (default): the running period; previous: the one before it.'),
  }),
  async run({ subscription_id, period }, { db, orgId, usage }) {
    return getSubscriptionUsage(db, storesOf(usage), orgId, subscription_id, { period });
  },
});

export const previewUpcomingInvoiceTool = defineTool({
  name: 'preview_upcoming_invoice',
  title: "A subscription's upcoming invoice",
  description:
    'The invoice the next billing run would create for the running period of one subscription: lines, tax and ' +
    'total with the usage counted so far. Same figures as GET /subscriptions/{id}/upcoming-invoice.',
  input: z.strictObject({
    subscription_id: integerId.describe('The subscription id (an integer).'),
  }),
  async run({ subscription_id }, { db, orgId, usage }) {
    return previewUpcomingInvoice(db, storesOf(usage), orgId, subscription_id);
  },
});
