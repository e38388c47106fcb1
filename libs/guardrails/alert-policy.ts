import type { Database } from '../db/index.js';
import { evaluateAlerts } from './alerts.js';
import type { GuardrailPolicy } from './evaluator.js';

/** Usage counted moves usage and credit metrics: the alerts of the touched subscriptions are evaluated. */
export function alertPolicy(db: Database): GuardrailPolicy {
  return {
    name: 'alerts',
    async evaluate(touched, stores) {
      await evaluateAlerts(db, stores, {
        subscriptions: touched.map((t) => ({ orgId: t.orgId, subscriptionId: t.subscriptionId })),
      });
    },
  };
}
