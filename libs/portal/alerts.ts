import { createHmac } from 'node:crypto';
import { equalInConstantTime } from '../bytes/index.js';
import type { Database, Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { createAlert, deleteAlert, getAlert, listAlerts } from '../guardrails/index.js';
import type { Alert } from '../schemas/index.js';
import type { UsageReadStores } from '../usage/index.js';
import type { Granted, PortalAccess } from './sessions.js';

/**
 * The customer's spend alerts in the portal (docs/decisions.md, "The portal's one write"): listed,
 * and usage_amount alerts added and removed on the customer's own subscriptions. Forms carry a
 * CSRF token bound to the portal session: an HMAC of a fixed label keyed with the session's token,
 * which only a page of that session shows. Nothing else in the portal writes.
 */

const CSRF_LABEL = 'portal-alerts/1';

export function portalCsrfToken(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update(CSRF_LABEL).digest('base64url');
}

/** Whether `given` is this session's CSRF token (constant time). */
export function isPortalCsrfToken(sessionToken: string, given: unknown): boolean {
  return typeof given === 'string' && equalInConstantTime(given, portalCsrfToken(sessionToken));
}

export async function customerAlerts(db: Queryable, access: Granted<PortalAccess>): Promise<Alert[]> {
  const { data } = await listAlerts(db, access.orgId, {
    customer_id: access.customerId,
    limit: 100,
    offset: 0,
  });
  return data;
}

/** A usage_amount alert on one of the session's customer's subscriptions (any other: 404). */
export async function addPortalAlert(
  db: Database,
  stores: UsageReadStores,
  access: Granted<PortalAccess>,
  form: { subscription_id?: unknown; threshold?: unknown; name?: unknown },
): Promise<Alert> {
  const subscriptionId = Number(form.subscription_id);
  if (!Number.isSafeInteger(subscriptionId) || subscriptionId <= 0) {
    throw ApiError.notFound(`Subscription ${String(form.subscription_id)}`);
  }
  return createAlert(
    db,
    stores,
    access.orgId,
    {
      subscription_id: subscriptionId,
      metric: 'usage_amount',
      threshold:
        typeof form.threshold === 'string' ? form.threshold.trim().replace(',', '.') : form.threshold,
      ...(typeof form.name === 'string' && form.name.trim() ? { name: form.name.trim() } : {}),
    },
    { customerId: access.customerId, usageAmountOnly: true },
  );
}

/** Removes one of the customer's usage_amount alerts (any other: 404). */
export async function removePortalAlert(
  db: Queryable,
  access: Granted<PortalAccess>,
  alertId: string,
): Promise<void> {
  const alert = await getAlert(db, access.orgId, alertId);
  if (alert.customer_id !== access.customerId || alert.metric !== 'usage_amount') {
    throw ApiError.notFound(`Alert ${alertId}`);
  }
  await deleteAlert(db, access.orgId, alertId, { customerId: access.customerId });
}
