import { z } from 'zod';
import { postDraft, withdrawInvoice } from '../../billing/index.js';
import {
  getPublicInvoice,
  hostedLinksOf,
  listInvoices,
  rotateHostedLink,
  toPublicInvoice,
} from '../../invoices/index.js';
import { getOrganization } from '../../organizations/index.js';
import { INVOICE_STATUSES, Invoice, uuidInput } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag } from '../flags.js';
import { organizationOf, pageFlags, pagesBaseUrl, publicPage } from '../lookups.js';

const flags = z.strictObject({ id: uuidInput, org: idFlag.optional() });

export const invoiceCommands = [
  defineCommand({
    name: 'invoice post',
    summary:
      "Post a DRAFT invoice, re-rated over the usage counted now (consumes the customer's credit first; emits invoice.posted, invoice.paid)",
    usage: '--id UUID [--org ID]',
    flags,
    run: ({ db }, f) => db.transaction((tx) => postDraft(tx, { invoiceId: f.id, orgId: f.org })),
  }),
  defineCommand({
    name: 'invoice withdraw',
    summary: 'Withdraw a DRAFT or POSTED invoice',
    usage: '--id UUID [--org ID]',
    flags,
    run: ({ db }, f) => db.transaction((tx) => withdrawInvoice(tx, { invoiceId: f.id, orgId: f.org })),
  }),
  defineCommand({
    name: 'invoice list',
    summary: "An organization's invoices with their items, newest first, as GET /invoices answers",
    usage: `--org ID [--customer ID] [--status ${INVOICE_STATUSES.join('|')}] [--limit 1-100] [--offset N]`,
    flags: z.strictObject({
      org: idFlag,
      customer: idFlag.optional(),
      status: z.enum(INVOICE_STATUSES).optional(),
      ...pageFlags,
    }),
    run: async ({ db, config }, f) => {
      await getOrganization(db, f.org);
      const filter = { customerId: f.customer, status: f.status };
      const page = await listInvoices(db, f.org, filter, f);
      const links = await hostedLinksOf(
        db,
        f.org,
        page.data.map((record) => record.id),
      );
      const data = page.data.map((record) => toPublicInvoice(record, pagesBaseUrl(config), links));
      return publicPage(Invoice, f, { data, total: page.total });
    },
  }),
  defineCommand({
    name: 'invoice show',
    summary: 'One invoice with its items, as GET /invoices/{id} answers (with --org, only within it)',
    usage: '--id UUID [--org ID]',
    flags,
    run: async ({ db, config }, f) => {
      const orgId = await organizationOf(db, 'invoices', f.id, f.org);
      return z.encode(Invoice, await getPublicInvoice(db, orgId, f.id, pagesBaseUrl(config)));
    },
  }),
  defineCommand({
    name: 'invoice rotate-hosted-url',
    summary:
      'Give the invoice a new hosted link, as POST /invoices/{id}/rotate-hosted-url: every earlier link opens nothing',
    usage: '--id UUID [--org ID]',
    flags,
    run: async ({ db, config }, f) => {
      const orgId = await organizationOf(db, 'invoices', f.id, f.org);
      return z.encode(Invoice, await rotateHostedLink(db, orgId, f.id, pagesBaseUrl(config)));
    },
  }),
];
