import { z } from 'zod';
import { ApiError } from '../../errors/index.js';
import { createAlert, deleteAlert, listAlerts } from '../../guardrails/index.js';
import { ALERT_STATUSES } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag, integerFlag, textFlag } from '../flags.js';
import { withReadStores } from '../read-stores.js';

/** Spend alerts (docs/decisions.md, "Alerts fire once per crossing"), as POST/GET/DELETE /alerts. */
export const alertCommands = [
  defineCommand({
    name: 'alert create',
    summary:
      "Create a spend alert: usage_quantity (an item's period quantity, --item), usage_amount (the subscription's period amount before tax) or credit_balance (the customer's projected credit falls below it); alert.triggered once per crossing",
    usage:
      '--subscription ID --metric usage_quantity|usage_amount|credit_balance --threshold D [--item ID] [--name N] [--org ID]',
    flags: z.strictObject({
      subscription: idFlag,
      metric: textFlag,
      threshold: textFlag,
      item: idFlag.optional(),
      name: textFlag.optional(),
      org: idFlag.optional(),
    }),
    flagOfField: { subscription_id: 'subscription', subscription_item_id: 'item' },
    run: async (context, f) => {
      const orgId = f.org ?? (await orgOfSubscription(context.db, f.subscription));
      return withReadStores(context, (stores) =>
        createAlert(context.db, stores, orgId, {
          subscription_id: f.subscription,
          metric: f.metric,
          threshold: f.threshold,
          ...(f.item === undefined ? {} : { subscription_item_id: f.item }),
          ...(f.name === undefined ? {} : { name: f.name }),
        }),
      );
    },
  }),
  defineCommand({
    name: 'alert list',
    summary: "An organization's alerts, newest first",
    usage: '--org ID [--subscription ID] [--customer ID] [--status OK|TRIGGERED] [--limit N] [--offset N]',
    flags: z.strictObject({
      org: idFlag,
      subscription: idFlag.optional(),
      customer: idFlag.optional(),
      status: z.enum(ALERT_STATUSES).optional(),
      limit: integerFlag(1, 100).default(25),
      offset: integerFlag(0).default(0),
    }),
    run: ({ db }, f) =>
      listAlerts(db, f.org, {
        subscription_id: f.subscription,
        customer_id: f.customer,
        status: f.status,
        limit: f.limit,
        offset: f.offset,
      }),
  }),
  defineCommand({
    name: 'alert delete',
    summary: 'Delete an alert',
    usage: '--id UUID --org ID',
    flags: z.strictObject({ id: textFlag, org: idFlag }),
    run: async ({ db }, f) => {
      await deleteAlert(db, f.org, f.id);
      return { id: f.id, deleted: true };
    },
  }),
];

async function orgOfSubscription(
  db: { query: (sql: string, values: unknown[]) => Promise<{ rows: { org_id: number }[] }> },
  id: number,
) {
  const { rows } = await db.query('SELECT org_id FROM subscriptions WHERE id = $1', [id]);
  if (!rows[0]) throw ApiError.notFound(`Subscription ${id}`);
  return rows[0].org_id;
}
