import { z } from 'zod';
import { getCreditBalance } from '../../billing/index.js';
import { integerId } from '../../schemas/index.js';
import { defineTool } from './tool.js';
import { storesOf } from './usage.js';

export const getCreditBalanceTool = defineTool({
  name: 'get_credit_balance',
  title: "A customer's prepaid credit balance",
  description:
    "One customer's credits: available (what its ACTIVE grants can pay now), pending (its subscriptions' " +
    'upcoming invoices), projected (available - pending) and the next expiry. Same figures as ' +
    'GET /customers/{id}/credit-balance.',
  input: z.strictObject({
    customer_id: integerId.describe('The customer id (an integer).'),
  }),
  async run({ customer_id }, { db, orgId, usage }) {
    return getCreditBalance(db, storesOf(usage), orgId, customer_id);
  },
});
