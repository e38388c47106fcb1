import { z } from 'zod';
import { createCreditGrant, listCreditGrants, voidCreditGrant } from '../../billing/index.js';
import { afterCreditsMoved } from '../../guardrails/index.js';
import { CREDIT_GRANT_STATUSES } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag, integerFlag, referenceFlag, textFlag } from '../flags.js';
import { withReadStores } from '../read-stores.js';

/** Prepaid credits (docs/decisions.md, "Credits"), the same functions as the API's routes. */
export const creditCommands = [
  defineCommand({
    name: 'credit grant',
    summary:
      'Grant credits to a customer: promotional (ACTIVE at once) or paid (PENDING until its Prepaid credits invoice is paid); posted invoices burn them down by priority, soonest expiry, oldest',
    usage:
      '--customer ID --amount D --category paid|promotional [--name N] [--priority 0..100] [--applies-to all|usage] ' +
      '[--effective-at ISO] [--expires-at ISO] [--reference R] [--org ID]',
    flags: z.strictObject({
      customer: idFlag,
      amount: textFlag,
      category: textFlag,
      name: textFlag.optional(),
      priority: integerFlag(0).optional(),
      'applies-to': textFlag.optional(),
      'effective-at': textFlag.optional(),
      'expires-at': textFlag.optional(),
      reference: referenceFlag.optional(),
      org: idFlag.optional(),
    }),
    run: async (context, f) => {
      const { db } = context;
      const { grant, created } = await db.transaction((tx) =>
        createCreditGrant(tx, {
          customerId: f.customer,
          orgId: f.org,
          input: {
            amount: f.amount,
            category: f.category,
            name: f.name,
            priority: f.priority,
            applies_to: f['applies-to'],
            effective_at: f['effective-at'],
            expires_at: f['expires-at'],
            reference: f.reference,
          },
        }),
      );
      if (created) {
        const orgId =
          f.org ??
          (await db.query<{ org_id: number }>('SELECT org_id FROM customers WHERE id = $1', [f.customer]))
            .rows[0]!.org_id;
        await withReadStores(context, (stores) =>
          afterCreditsMoved(db, stores, [{ orgId, customerId: f.customer }]),
        );
      }
      return grant;
    },
  }),
  defineCommand({
    name: 'credit list',
    summary: "A customer's credit grants, newest first",
    usage: '--customer ID [--org ID] [--status S] [--limit N] [--offset N]',
    flags: z.strictObject({
      customer: idFlag,
      org: idFlag.optional(),
      status: z.enum(CREDIT_GRANT_STATUSES).optional(),
      limit: integerFlag(1, 100).default(25),
      offset: integerFlag(0).default(0),
    }),
    run: async ({ db }, f) => {
      const orgId =
        f.org ??
        (await db.query<{ org_id: number }>('SELECT org_id FROM customers WHERE id = $1', [f.customer]))
          .rows[0]?.org_id;
      if (orgId === undefined) return listCreditGrants(db, 0, f.customer, f); // answers the 404
      return listCreditGrants(db, orgId, f.customer, f);
    },
  }),
  defineCommand({
    name: 'credit void',
    summary:
      "Void a credit grant: what is left lapses, what was used stays used; a PENDING grant's invoice is withdrawn",
    usage: '--id UUID [--org ID]',
    flags: z.strictObject({ id: textFlag, org: idFlag.optional() }),
    run: async (context, f) => {
      const grant = await context.db.transaction((tx) =>
        voidCreditGrant(tx, { grantId: f.id, orgId: f.org }),
      );
      const { rows } = await context.db.query<{ org_id: number }>(
        'SELECT org_id FROM credit_grants WHERE id = $1',
        [grant.id],
      );
      await withReadStores(context, (stores) =>
        afterCreditsMoved(context.db, stores, [{ orgId: rows[0]!.org_id, customerId: grant.customer_id }]),
      );
      return grant;
    },
  }),
];
