import {
  applyItemSet,
  BILLABLE_STATUSES,
  type BillableItem,
  type ChangeMode,
  type ChangingSubscription,
  loadBillableItems,
  parseInput,
  resolveItemSet,
  subscriptionUpdatedEventData,
} from '../billing/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { emitDomainEvent } from '../events/index.js';
import { formatMoney, parseMoney } from '../money/index.js';
import {
  type PendingChange,
  parseIntegerId,
  type Subscription,
  type SubscriptionChange,
  SubscriptionChangeRequest,
  type SubscriptionStatus,
} from '../schemas/index.js';
import { SUBSCRIPTION_COLUMNS, type SubscriptionRow, toSubscription } from './subscriptions.js';

/**
 * A change of a subscription's items (DESIGN §9.2), the one function behind POST
 * /subscriptions/{id}/changes and the console's `subscription update`. It runs in the caller's
 * transaction and holds the subscription's row lock (FOR NO KEY UPDATE, the lock a billing run
 * claims with): a change and a run, or two changes, of one subscription never interleave; the
 * later one waits and applies on what the first left, or a run skips the row until its next pass.
 * A preview does the very same inside a savepoint it rolls back, so it equals what is applied.
 */

interface LockedSubscription extends ChangingSubscription {
  customer_id: number;
  status: SubscriptionStatus;
  next_billing_date: Date;
  billing_parked_reason: string | null;
}

/** Statuses whose running period is not billed: the new items simply replace the old. */
const UNBILLED_STATUSES: readonly SubscriptionStatus[] = ['trialing', 'pending', 'paused'];

export async function changeSubscription(
  tx: Queryable,
  input: { subscriptionId: number | string; orgId?: number | undefined; change: unknown; now?: Date },
): Promise<SubscriptionChange> {
  const change = parseInput(SubscriptionChangeRequest, input.change);
  if (!change.preview) return applyChange(tx, input, change);
  await tx.query('SAVEPOINT subscription_change_preview');
  try {
    return await applyChange(tx, input, change);
  } finally {
    await tx.query('ROLLBACK TO SAVEPOINT subscription_change_preview');
    await tx.query('RELEASE SAVEPOINT subscription_change_preview');
  }
}

type ParsedChange = ReturnType<typeof SubscriptionChangeRequest.parse>;

async function applyChange(
  tx: Queryable,
  input: { subscriptionId: number | string; orgId?: number | undefined; now?: Date },
  change: ParsedChange,
): Promise<SubscriptionChange> {
  const now = input.now ?? new Date();
  const id = parseIntegerId(input.subscriptionId);
  if (id === undefined) throw ApiError.notFound(`Subscription ${input.subscriptionId}`);
  // The UPDATE takes the row lock a billing run claims with (FOR NO KEY UPDATE): updated_at moves
  // with any change, and a refusal rolls it back with the rest.
  const { rows } = await tx.query<LockedSubscription & SubscriptionRow & { has_pending_change: boolean }>(
    `UPDATE subscriptions s SET updated_at = now()
      WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)
     RETURNING ${SUBSCRIPTION_COLUMNS}, s.org_id, s.currency, s.billing_parked_reason,
               EXISTS (SELECT 1 FROM subscription_pending_changes c
                        WHERE c.org_id = s.org_id AND c.subscription_id = s.id) AS has_pending_change`,
    [id, input.orgId ?? null],
  );
  const subscription = rows[0];
  if (!subscription) throw ApiError.notFound(`Subscription ${input.subscriptionId}`);
  assertChangeable(subscription, now, change.effective);

  const items =
    (await loadBillableItems(tx, [subscription.org_id], [subscription.id])).get(subscription.id) ?? [];
  const current = items.filter((item) => !item.removed_at);
  const resolved = await resolveItemSet(tx, subscription, current, change.items, { checkActive: true });

  if (change.effective === 'period_end') {
    const effectiveAt = subscription.current_period_end;
    // what the run will apply at the boundary must pass the same door checks now
    await tx.query('SAVEPOINT subscription_change_check');
    try {
      await applyItemSet(tx, subscription, items, resolved, { at: effectiveAt, mode: 'direct' });
    } finally {
      await tx.query('ROLLBACK TO SAVEPOINT subscription_change_check');
      await tx.query('RELEASE SAVEPOINT subscription_change_check');
    }
    await tx.query(
      `INSERT INTO subscription_pending_changes (subscription_id, org_id, items, effective_at)
       VALUES ($1, $2, $3, $4)
       ON CONFLICT (subscription_id) DO UPDATE SET items = EXCLUDED.items, effective_at = EXCLUDED.effective_at,
              created_at = now()`,
      [subscription.id, subscription.org_id, JSON.stringify(resolved), effectiveAt],
    );
    return {
      subscription: answered(subscription, current, {
        items: resolved,
        effective_at: effectiveAt.toISOString(),
      }),
      proration_lines: [],
      effective_at: effectiveAt.toISOString(),
    };
  }

  const mode: ChangeMode = UNBILLED_STATUSES.includes(subscription.status) ? 'direct' : change.proration;
  const applied = await applyItemSet(tx, subscription, items, resolved, { at: now, mode });
  if (subscription.has_pending_change) {
    // an immediate change supersedes a scheduled one (its item ids may no longer exist)
    await tx.query('DELETE FROM subscription_pending_changes WHERE org_id = $1 AND subscription_id = $2', [
      subscription.org_id,
      subscription.id,
    ]);
  }
  await emitDomainEvent(tx, {
    orgId: subscription.org_id,
    type: 'subscription.updated',
    data: subscriptionUpdatedEventData(subscription, applied),
  });
  return {
    subscription: answered(subscription, applied.after, null),
    proration_lines: applied.proration_lines.map(({ product_id: _product, ...line }) => line),
    effective_at: applied.effective_at.toISOString(),
  };
}

/**
 * The subscription object after the change, from what the change read and wrote (the row as the
 * UPDATE returned it, the items as written): what GET /subscriptions/{id} answers next.
 */
function answered(
  row: SubscriptionRow,
  items: readonly BillableItem[],
  pendingChange: PendingChange | null,
): Subscription {
  const columns = Object.fromEntries(
    SUBSCRIPTION_COLUMNS.split(',').map((column) => {
      const name = column.trim().replace(/^s\./, '');
      return [name, (row as unknown as Record<string, unknown>)[name]];
    }),
  ) as SubscriptionRow;
  const shown = [...items]
    .sort((a, b) => a.subscription_item_id - b.subscription_item_id)
    .map((item) => ({
      id: item.subscription_item_id,
      product_id: item.product_id,
      product_name: item.product_name,
      quantity: item.quantity,
      unit_price: formatMoney(parseMoney(item.unit_price)),
      usage_type: item.usage_type,
      included_units: formatMoney(parseMoney(item.included_units)),
    }));
  return toSubscription(columns, shown, pendingChange);
}

function assertChangeable(
  subscription: LockedSubscription,
  now: Date,
  effective: 'now' | 'period_end',
): void {
  if (subscription.status === 'canceled' || subscription.status === 'expired') {
    throw ApiError.conflict(
      `Subscription ${subscription.id} is ${subscription.status}; its items cannot change.`,
    );
  }
  if (subscription.billing_parked_reason !== null) {
    throw ApiError.conflict(
      `Subscription ${subscription.id} is parked (${subscription.billing_parked_reason}); unpark it or cancel it first.`,
    );
  }
  if (
    (BILLABLE_STATUSES as readonly string[]).includes(subscription.status) &&
    subscription.next_billing_date <= now
  ) {
    // proration is measured against the running period: one that ended must be invoiced first
    throw ApiError.conflict(
      `Subscription ${subscription.id} has a period that ended ${subscription.next_billing_date.toISOString()} and is ` +
        'not invoiced yet; the billing run must bill it before the items change.',
    );
  }
  if (effective === 'period_end' && subscription.status === 'pending') {
    throw ApiError.conflict(
      `Subscription ${subscription.id} has not started; change it now, its items apply from its start.`,
    );
  }
  if (subscription.status !== 'pending' && now < subscription.current_period_start) {
    throw ApiError.conflict(
      `Subscription ${subscription.id}'s current period begins ${subscription.current_period_start.toISOString()}, after this change.`,
    );
  }
}
