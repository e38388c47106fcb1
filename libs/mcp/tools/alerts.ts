import { z } from 'zod';
import { listAlerts } from '../../guardrails/index.js';
import { integerId } from '../../schemas/index.js';
import { defineTool, toolLimit } from './tool.js';

export const listAlertsTool = defineTool({
  name: 'list_alerts',
  title: 'Spend alerts',
  description:
    "The organization's spend alerts, newest first, optionally of one customer or subscription: each with its " +
    'metric (usage_quantity, usage_amount, credit_balance), threshold, status (OK or TRIGGERED), the value at the ' +
    'last evaluation and when it triggered. Same figures as GET /alerts.',
  input: z.strictObject({
    customer_id: integerId.optional().describe('Only this customer (an integer).'),
    subscription_id: integerId.optional().describe('Only this subscription (an integer).'),
    limit: toolLimit,
  }),
  async run({ customer_id, subscription_id, limit }, { db, orgId }) {
    const { data, total } = await listAlerts(db, orgId, { customer_id, subscription_id, limit, offset: 0 });
    return { total, alerts: data };
  },
});
