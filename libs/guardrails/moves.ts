import { checkTopUps } from '../billing/index.js';
import type { Database } from '../db/index.js';
import type { UsageReadStores } from '../usage/index.js';
import { evaluateAlerts } from './alerts.js';

/**
 * What follows any move of what customers can spend or owe besides usage (a posting, a grant made
 * or voided, an expiry, a change of items): their automatic top-ups are checked, then their
 * alerts evaluated (a top-up moves `projected` back up).
 */
export async function afterCreditsMoved(
  db: Database,
  stores: UsageReadStores,
  customers: readonly { orgId: number; customerId: number }[],
): Promise<void> {
  if (customers.length === 0) return;
  await checkTopUps(db, stores, customers);
  await evaluateAlerts(db, stores, { customers });
}
