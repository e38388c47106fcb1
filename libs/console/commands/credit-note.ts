import { z } from 'zod';
import { createCreditNote, listCreditNotes } from '../../billing/index.js';
import { afterCreditsMoved } from '../../guardrails/index.js';
import { parseMoney } from '../../money/index.js';
import { uuidInput } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag, integerFlag, jsonFlag, textFlag } from '../flags.js';
import { organizationOf } from '../lookups.js';
import { withReadStores } from '../read-stores.js';

/** Credit notes (docs/decisions.md, "Credit notes"), the same functions as the API's routes. */
export const creditNoteCommands = [
  defineCommand({
    name: 'credit-note create',
    summary:
      "Issue a credit note against an invoice's lines (before tax; the invoice's tax reversed per component): a credit memo up to the balance, a promotional grant for the rest",
    usage:
      '--invoice UUID --lines \'[{"invoice_item_id":1,"amount":"10.00"}]\' ' +
      '--reason duplicate|fraudulent|order_change|product_unsatisfactory|usage_correction|other [--memo M] [--org ID]',
    flags: z.strictObject({
      invoice: uuidInput,
      lines: jsonFlag(z.unknown()),
      reason: textFlag,
      memo: textFlag.optional(),
      org: idFlag.optional(),
    }),
    run: async (context, f) => {
      const { db } = context;
      const note = await db.transaction((tx) =>
        createCreditNote(tx, {
          invoiceId: f.invoice,
          orgId: f.org,
          input: { reason: f.reason, lines: f.lines, ...(f.memo === undefined ? {} : { memo: f.memo }) },
        }),
      );
      if (parseMoney(note.credited_to_customer) > 0n) {
        const orgId = await organizationOf(db, 'invoices', f.invoice, f.org);
        await withReadStores(context, (stores) =>
          afterCreditsMoved(db, stores, [{ orgId, customerId: note.customer_id }]),
        );
      }
      return note;
    },
  }),
  defineCommand({
    name: 'credit-note list',
    summary: "An invoice's credit notes, newest first, as GET /invoices/{id}/credit-notes answers",
    usage: '--invoice UUID [--org ID] [--limit N] [--offset N]',
    flags: z.strictObject({
      invoice: uuidInput,
      org: idFlag.optional(),
      limit: integerFlag(1, 100).default(25),
      offset: integerFlag(0).default(0),
    }),
    run: async ({ db }, f) => {
      const orgId = await organizationOf(db, 'invoices', f.invoice, f.org);
      return listCreditNotes(db, orgId, { invoiceId: f.invoice }, { limit: f.limit, offset: f.offset });
    },
  }),
];
