import { z } from 'zod';
import {
  createCreditMemo,
  createRefund,
  type MoneyResult,
  moneyInput,
  recordPayment,
} from '../../billing/index.js';
import { TRANSACTION_METHODS, uuidInput } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag, referenceFlag } from '../flags.js';

const PAID_USAGE = `--invoice UUID --amount D [--method ${TRANSACTION_METHODS.join('|')}] [--reference R] [--note N] [--org ID]`;

const money = {
  invoice: uuidInput,
  amount: moneyInput,
  org: idFlag.optional(),
  note: z.string().max(1000).optional(),
};
const paid = {
  ...money,
  method: z.enum(TRANSACTION_METHODS).optional(),
  reference: referenceFlag.optional(),
};

/** The transaction created, in its public representation, with the invoice as it now stands. */
const printed = ({ transaction, invoice }: MoneyResult) => ({ ...transaction, invoice });

export const paymentCommands = [
  defineCommand({
    name: 'payment record',
    summary:
      'Record a completed payment (emits payment.succeeded, and invoice.paid when it settles the invoice); ' +
      'repeated with the same --reference it records nothing new, without one each run is another payment',
    usage: PAID_USAGE,
    flags: z.strictObject(paid),
    run: async ({ db }, f) =>
      printed(
        await db.transaction((tx) =>
          recordPayment(tx, {
            invoiceId: f.invoice,
            orgId: f.org,
            amount: f.amount,
            method: f.method,
            reference: f.reference,
            note: f.note,
          }),
        ),
      ),
  }),
  defineCommand({
    name: 'credit-memo create',
    summary:
      'Credit an invoice (lowers the balance without a payment; emits invoice.paid when it settles it)',
    usage: '--invoice UUID --amount D [--note N] [--org ID]',
    flags: z.strictObject(money),
    run: async ({ db }, f) =>
      printed(
        await db.transaction((tx) =>
          createCreditMemo(tx, { invoiceId: f.invoice, orgId: f.org, amount: f.amount, note: f.note }),
        ),
      ),
  }),
  defineCommand({
    name: 'refund create',
    summary:
      'Refund part or all of what was paid on an invoice; repeated with the same --reference it records nothing new',
    usage: PAID_USAGE,
    flags: z.strictObject(paid),
    run: async ({ db }, f) =>
      printed(
        await db.transaction((tx) =>
          createRefund(tx, {
            invoiceId: f.invoice,
            orgId: f.org,
            amount: f.amount,
            method: f.method,
            reference: f.reference,
            note: f.note,
          }),
        ),
      ),
  }),
];
