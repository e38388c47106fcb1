import { z } from 'zod';
import { getEntitlement, listEntitlements } from '../../entitlements/index.js';
import { integerId } from '../../schemas/index.js';
import { defineTool } from './tool.js';
import { storesOf } from './usage.js';

export const getEntitlementsTool = defineTool({
  name: 'get_entitlements',
  title: "A customer's entitlements",
  description:
    'Whether a customer may use each product of its subscriptions now: has_access (subscription active or trialing ' +
    'and used below usage_limit, or no limit), usage_limit, used in the running period, remaining, period_end. ' +
    'With product_id, that product only. Same figures as GET /customers/{id}/entitlements[/{product_id}].',
  input: z.strictObject({
    customer_id: integerId.describe('The customer id (an integer).'),
    product_id: integerId.optional().describe('Only this product (an integer).'),
  }),
  async run({ customer_id, product_id }, { db, orgId, usage }) {
    const counter = storesOf(usage).counter;
    if (!counter) throw new Error('the MCP server was built without the usage counters');
    return product_id === undefined
      ? { data: await listEntitlements(db, counter, orgId, customer_id) }
      : { data: await getEntitlement(db, counter, orgId, customer_id, product_id) };
  },
});
