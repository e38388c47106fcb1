import { z } from 'zod';
import { instantInput, runBilling, UnbillableError, usageSource } from '../../billing/index.js';
import { ApiError } from '../../errors/index.js';
import { getOrganization } from '../../organizations/index.js';
import {
  BILLING_PERIODS,
  SUBSCRIPTION_STATUSES,
  Subscription,
  SubscriptionChange,
  SubscriptionChangeItem,
} from '../../schemas/index.js';
import {
  cancelSubscription,
  changeSubscription,
  createSubscription,
  getSubscription,
  listSubscriptions,
  NewSubscriptionItem,
  unparkSubscription,
} from '../../subscriptions/index.js';
import { openUsageAggregator } from '../../usage/index.js';
import { defineCommand } from '../command.js';
import { billingNowFlag, booleanFlag, booleanValue, idFlag, integerFlag, jsonFlag } from '../flags.js';
import { organizationOf, pageFlags, publicPage } from '../lookups.js';

export const subscriptionCommands = [
  defineCommand({
    name: 'subscription create',
    summary:
      'Subscribe a customer; an item is metered when its product is usage-priced (emits subscription.created)',
    usage:
      `--org ID --customer ID --items '[{"product_id":12,"quantity":2,"unit_price":"20.00"},{"product_id":14,"included_units":"1000"}]' ` +
      "(unit_price: this subscription's price instead of the product's, linear prices only) " +
      '[--trial-days N] [--billing-period monthly|quarterly|annually] [--term-type evergreen|termed] ' +
      '[--initial-term-months N] [--auto-renew true|false] [--start ISO] [--title T]',
    flags: z.strictObject({
      org: idFlag,
      customer: idFlag,
      items: jsonFlag(z.array(NewSubscriptionItem)),
      'trial-days': integerFlag(0, 730).optional(),
      'billing-period': z.enum(BILLING_PERIODS).optional(),
      'term-type': z.enum(['evergreen', 'termed']).optional(),
      'initial-term-months': integerFlag(1, 120).optional(),
      // --auto-renew alone means true; omitted, the default applies (true)
      'auto-renew': booleanValue.optional(),
      start: instantInput.optional(),
      title: z.string().max(255).optional(),
    }),
    flagOfField: { customer_id: 'customer', start_date: 'start' },
    run: async ({ db }, f) => {
      await getOrganization(db, f.org);
      return db.transaction((tx) =>
        createSubscription(tx, f.org, {
          customer_id: f.customer,
          items: f.items,
          trial_days: f['trial-days'],
          billing_period: f['billing-period'],
          term_type: f['term-type'],
          initial_term_months: f['initial-term-months'],
          auto_renew: f['auto-renew'],
          start_date: f.start,
          title: f.title,
        }),
      );
    },
  }),
  defineCommand({
    name: 'subscription cancel',
    summary:
      'Cancel now (emits subscription.canceled; the running period is invoiced until now and posted: usage, ' +
      'waiting proration lines, licensed items to the second unless --proration none) or at the end of the ' +
      'current period (the billing run does); periods that already ended are invoiced first, unless ' +
      '--without-invoicing (recorded on the subscription)',
    usage:
      '--id ID [--at-period-end | --without-invoicing] [--proration prorate|none] [--org ID] [--now ISO]',
    flags: z.strictObject({
      id: idFlag,
      'at-period-end': booleanFlag,
      /** A cancel now: licensed items billed to the second (prorate, the default) or for the whole period. */
      proration: z.enum(['prorate', 'none']).optional(),
      /** The way out for a subscription that can never be invoiced (a parked one): ends it now. */
      'without-invoicing': booleanFlag,
      org: idFlag.optional(),
      /** As of this instant (default: now), like `billing run --now`. */
      now: billingNowFlag.optional(),
    }),
    flagOfField: { without_invoicing: 'without-invoicing' },
    run: async ({ db, config, progress }, f) => {
      if (f['without-invoicing']) {
        return db.transaction((tx) =>
          cancelSubscription(tx, {
            subscriptionId: f.id,
            orgId: f.org,
            atPeriodEnd: f['at-period-end'],
            withoutInvoicing: true,
            now: f.now,
          }),
        );
      }
      // Billing is in arrears: a period that ended before the next billing run is invoiced here,
      // in the same transaction, so canceling never loses it, and --at-period-end means the
      // period running now rather than one that already ended.
      const usage = await openUsageAggregator(config, db);
      try {
        await usage.caughtUp({ onWaiting: progress });
        return await db.transaction(async (tx) => {
          const unbillable = (reason: string) =>
            ApiError.conflict(
              `Subscription ${f.id} has ended periods that could not be invoiced (${reason}); nothing was canceled.`,
            );
          // Inside this transaction the run cannot set a failing subscription aside: it throws.
          const billed = await runBilling(tx, {
            usage: usageSource(usage.aggregator),
            orgId: f.org,
            subscriptionIds: [f.id],
            now: f.now,
          }).catch((error: unknown) => {
            if (error instanceof UnbillableError) throw unbillable(error.reason);
            if (error instanceof ApiError) throw error;
            throw unbillable((error as Error).message);
          });
          if (billed.failures.length) {
            throw unbillable(billed.failures.map((failure) => failure.error).join('; '));
          }
          return cancelSubscription(tx, {
            subscriptionId: f.id,
            orgId: f.org,
            atPeriodEnd: f['at-period-end'],
            finalInvoice: { usage: usageSource(usage.aggregator), proration: f.proration },
            now: f.now,
          });
        });
      } finally {
        await usage.close();
      }
    },
  }),
  defineCommand({
    name: 'subscription update',
    summary:
      "Change a subscription's items, as POST /subscriptions/{id}/changes does: now with proration lines on the " +
      'next invoice, or scheduled for the end of the period (emits subscription.updated when applied)',
    usage:
      `--id ID --items '[{"id":41,"quantity":5},{"product_id":14,"included_units":"1000"}]' ` +
      '(the whole new set: an item left out is removed) [--effective now|period_end] [--proration prorate|none] ' +
      '[--preview] [--org ID] [--now ISO]',
    flags: z.strictObject({
      id: idFlag,
      items: jsonFlag(z.array(SubscriptionChangeItem)),
      effective: z.enum(['now', 'period_end']).optional(),
      proration: z.enum(['prorate', 'none']).optional(),
      preview: booleanFlag,
      org: idFlag.optional(),
      /** As of this instant (default: now), like `billing run --now`. */
      now: billingNowFlag.optional(),
    }),
    run: async ({ db }, f) => {
      // one function behind this and the api, called the same way: it is atomic on its own
      const result = await changeSubscription(db, {
        subscriptionId: f.id,
        orgId: f.org,
        change: { items: f.items, effective: f.effective, proration: f.proration, preview: f.preview },
        now: f.now,
      });
      return z.encode(SubscriptionChange, result);
    },
  }),
  defineCommand({
    name: 'subscription unpark',
    summary:
      'Take a subscription the billing run parked (a period it could never invoice) back into billing, once the cause is fixed',
    usage: '--id ID [--org ID]',
    flags: z.strictObject({ id: idFlag, org: idFlag.optional() }),
    run: ({ db }, f) =>
      db.transaction((tx) => unparkSubscription(tx, { subscriptionId: f.id, orgId: f.org })),
  }),
  defineCommand({
    name: 'subscription list',
    summary: "An organization's subscriptions with their items, newest first, as GET /subscriptions answers",
    usage: `--org ID [--customer ID] [--status ${SUBSCRIPTION_STATUSES.join('|')}] [--limit 1-100] [--offset N]`,
    flags: z.strictObject({
      org: idFlag,
      customer: idFlag.optional(),
      status: z.enum(SUBSCRIPTION_STATUSES).optional(),
      ...pageFlags,
    }),
    run: async ({ db }, f) => {
      await getOrganization(db, f.org);
      const filter = { customerId: f.customer, status: f.status };
      return publicPage(Subscription, f, await listSubscriptions(db, f.org, filter, f));
    },
  }),
  defineCommand({
    name: 'subscription show',
    summary:
      'One subscription with its items, as GET /subscriptions/{id} answers (with --org, only within it)',
    usage: '--id ID [--org ID]',
    flags: z.strictObject({ id: idFlag, org: idFlag.optional() }),
    run: async ({ db }, f) => {
      const orgId = await organizationOf(db, 'subscriptions', f.id, f.org);
      return z.encode(Subscription, await getSubscription(db, orgId, f.id));
    },
  }),
];
