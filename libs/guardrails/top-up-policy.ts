import { checkTopUps } from '../billing/index.js';
import type { Database } from '../db/index.js';
import type { GuardrailPolicy } from './evaluator.js';

/** Usage counted moves `projected`: the customers' automatic top-ups are checked. */
export function topUpPolicy(db: Database): GuardrailPolicy {
  return {
    name: 'top-up',
    // the subscriptions of customers with an enabled top-up
    watches: `SELECT s.org_id, s.id FROM credit_top_ups t
                JOIN subscriptions s ON s.org_id = t.org_id AND s.customer_id = t.customer_id
               WHERE t.enabled`,
    async evaluate(touched, stores) {
      const customers = new Map(
        touched.map((t) => [`${t.orgId}|${t.customerId}`, { orgId: t.orgId, customerId: t.customerId }]),
      );
      await checkTopUps(db, stores, [...customers.values()]);
    },
  };
}
