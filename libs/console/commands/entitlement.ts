import { z } from 'zod';
import { listEntitlements } from '../../entitlements/index.js';
import { ApiError } from '../../errors/index.js';
import { defineCommand } from '../command.js';
import { idFlag } from '../flags.js';
import { withUsageCounter } from '../read-stores.js';

/** Entitlements (docs/decisions.md, "Entitlements"), as GET /customers/{id}/entitlements. */
export const entitlementCommands = [
  defineCommand({
    name: 'entitlement list',
    summary:
      "A customer's entitlements: per item of its subscriptions, has_access, usage_limit, used in the running period, remaining",
    usage: '--customer ID [--org ID]',
    flags: z.strictObject({ customer: idFlag, org: idFlag.optional() }),
    flagOfField: { customer_id: 'customer' },
    run: async (context, f) => {
      let orgId = f.org;
      if (orgId === undefined) {
        const { rows } = await context.db.query<{ org_id: number }>(
          'SELECT org_id FROM customers WHERE id = $1',
          [f.customer],
        );
        if (!rows[0]) throw ApiError.notFound(`Customer ${f.customer}`);
        orgId = Number(rows[0].org_id);
      }
      const org = orgId;
      return withUsageCounter(context, async (counter) => ({
        data: await listEntitlements(context.db, counter, org, f.customer),
      }));
    },
  }),
];
