import { z } from 'zod';
import { postInvoice, withdrawInvoice } from '../../billing/index.js';
import { uuid } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag } from '../flags.js';

const flags = z.strictObject({ id: uuid, org: idFlag.optional() });

export const invoiceCommands = [
  defineCommand({
    name: 'invoice post',
    summary:
      "Post a DRAFT invoice (consumes the customer's credit first; emits invoice.posted, invoice.paid)",
    usage: '--id UUID [--org ID]',
    flags,
    run: ({ db }, f) => db.transaction((tx) => postInvoice(tx, { invoiceId: f.id, orgId: f.org })),
  }),
  defineCommand({
    name: 'invoice withdraw',
    summary: 'Withdraw a DRAFT or POSTED invoice',
    usage: '--id UUID [--org ID]',
    flags,
    run: ({ db }, f) => db.transaction((tx) => withdrawInvoice(tx, { invoiceId: f.id, orgId: f.org })),
  }),
];
