import { rerateDirtyDrafts } from '../billing/index.js';
import type { Database } from '../db/index.js';
import type { GuardrailPolicy } from './evaluator.js';

/**
 * Usage counted (or voided) in a period whose invoice is still a DRAFT (a grace period's, or
 * `billing run --draft`'s) re-rates that draft, once the read-back counts it (docs/decisions.md
 * "Grace drafts"): the draft shows what the upcoming invoice would, within moments of the event.
 * Only drafts whose billed periods the event marked are touched.
 */
export function draftPolicy(db: Database): GuardrailPolicy {
  return {
    name: 'drafts',
    // the subscriptions with a draft: only a draft's billed periods are re-rated
    watches: `SELECT org_id, subscription_id FROM invoices WHERE status = 'DRAFT' AND subscription_id IS NOT NULL`,
    async evaluate(touched) {
      const byOrg = new Map<number, number[]>();
      for (const t of touched) byOrg.set(t.orgId, [...(byOrg.get(t.orgId) ?? []), t.subscriptionId]);
      for (const [orgId, subscriptionIds] of byOrg) await rerateDirtyDrafts(db, { orgId, subscriptionIds });
    },
  };
}
