import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCreditNote } from '../../libs/billing/index.js';
import { hostedInvoiceToken, hostedLinksOf } from '../../libs/invoices/index.js';
import {
  HOSTED_INVOICE_DAYS_AFTER_CLOSE,
  invoicePage,
  openHostedInvoice,
  type PortalAccess,
  portalHomePage,
  portalPrintableCreditNote,
  portalPrintableInvoice,
} from '../../libs/portal/index.js';
import type { Granted } from '../../libs/portal/sessions.js';
import {
  insertCustomer,
  insertInvoice,
  insertProduct,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import {
  createTestDatabase,
  recordingQueries,
  type SentQuery,
  type TestDatabase,
} from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';

/**
 * The portal's hosted invoice links and pages at the library level, on a database of this file's
 * own (the HTTP routes are test/portal/portal-http.test.ts): what a link opens, until when, and
 * which links are refused before any database round trip.
 */
let database: TestDatabase;
let orgId: number;
let quebec: number;
let ontario: number;
let open: { id: string; token: string };
let paid: { id: string; token: string };
let draft: { id: string; token: string };

const DAY_MS = 86_400_000;

beforeAll(async () => {
  database = await createTestDatabase('portal-library');
  const { db } = database;
  orgId = (await createTestOrg(db)).orgId;
  const otherOrgId = (await createTestOrg(db)).orgId;
  // so that no customer id here equals an organization id
  await insertCustomer(db, otherOrgId, { name: 'Elsewhere', country: 'US', state_province: 'NY' });
  await insertCustomer(db, otherOrgId, { name: 'Elsewhere too', country: 'US', state_province: 'NY' });
  quebec = (await insertCustomer(db, orgId, { name: 'Amélie', country: 'CA', state_province: 'QC' })).id;
  ontario = (await insertCustomer(db, orgId, { name: 'Olivia', country: 'CA', state_province: 'ON' })).id;
  const productId = (await insertProduct(db, orgId, { unitPrice: '10' })).id;
  const invoiceOf = async (customerId: number, status: 'POSTED' | 'PAID' | 'DRAFT') => {
    const subscriptionId = (await insertSubscription(db, orgId, { customerId, items: [{ productId }] })).id;
    const { id } = await insertInvoice(db, orgId, {
      customerId,
      subscriptionId,
      status,
      items: [{ productId }],
    });
    const links = await hostedLinksOf(db, orgId, [id]);
    return {
      id,
      token: hostedInvoiceToken(id, { key: links.key, generation: links.generations.get(id) ?? 0 }),
    };
  };
  open = await invoiceOf(quebec, 'POSTED');
  paid = await invoiceOf(ontario, 'PAID');
  draft = await invoiceOf(quebec, 'DRAFT');
});
afterAll(() => database?.drop());

describe('openHostedInvoice', () => {
  it("opens a collectible invoice for good, in its customer's language", async () => {
    expect(await openHostedInvoice(database.db, open.token)).toEqual({
      kind: 'granted',
      orgId,
      customerId: quebec,
      invoiceId: open.id,
      locale: 'fr-CA',
      validUntil: null,
    });
  });

  it('opens a closed invoice until 90 days after it closed, in English outside Quebec', async () => {
    const { rows } = await database.db.query<{ closed_at: Date }>(
      'SELECT closed_at FROM invoices WHERE id = $1',
      [paid.id],
    );
    const validUntil = new Date(rows[0]!.closed_at.getTime() + HOSTED_INVOICE_DAYS_AFTER_CLOSE * DAY_MS);
    expect(await openHostedInvoice(database.db, paid.token, new Date(validUntil.getTime() - 1))).toEqual({
      kind: 'granted',
      orgId,
      customerId: ontario,
      invoiceId: paid.id,
      locale: 'en',
      validUntil,
    });
    expect(await openHostedInvoice(database.db, paid.token, validUntil)).toEqual({ kind: 'expired' });
  });

  it('opens nothing for a draft, even with its own signature', async () => {
    expect(await openHostedInvoice(database.db, draft.token)).toEqual({ kind: 'unknown' });
  });

  it('refuses a link of the wrong shape without a database round trip', async () => {
    const sent: SentQuery[] = [];
    const db = recordingQueries(database.db, sent);
    for (const malformed of [
      `x${open.token}`,
      `${open.token}x`,
      open.token.slice(0, -1),
      `hinv-${open.token.slice(5)}`,
      '',
    ]) {
      expect(await openHostedInvoice(db, malformed), JSON.stringify(malformed)).toEqual({ kind: 'unknown' });
    }
    expect(sent).toEqual([]);
    // the right shape is looked up (once), and opens only with the signature of its organization
    expect(await openHostedInvoice(db, open.token)).toMatchObject({ kind: 'granted' });
    expect(sent).toHaveLength(1);
  });
});

describe('the portal pages of one customer', () => {
  const token = `pst_${'A'.repeat(43)}`;
  const base = 'https://billing.example.com';
  let access: Granted<PortalAccess>;
  let due: { id: string; subscriptionId: number };

  beforeAll(async () => {
    const { db } = database;
    const customerId = (
      await insertCustomer(db, orgId, { name: 'Homer', country: 'CA', state_province: 'ON' })
    ).id;
    const productId = (await insertProduct(db, orgId, { unitPrice: '10' })).id;
    const subscriptionId = (
      await insertSubscription(db, orgId, { customerId, title: 'Gold plan', items: [{ productId }] })
    ).id;
    const { id } = await insertInvoice(db, orgId, {
      customerId,
      subscriptionId,
      status: 'POSTED',
      invoiceDate: '2090-01-01',
      dueDate: '2090-01-31',
      items: [{ productId }],
    });
    due = { id, subscriptionId };
    access = {
      kind: 'granted',
      orgId,
      customerId,
      locale: 'en',
      expiresAt: new Date('2090-03-01T00:00:00Z'),
      organizationName: 'Org',
      customerName: 'Homer',
    };
  });

  it('marks an invoice overdue from the day after its due date, by the clock the request gives', async () => {
    const home = (now: string) =>
      portalHomePage(database.db, access, token, {
        base,
        locale: 'en',
        now: new Date(now),
        usageSource: undefined,
      });
    expect(await home('2090-01-31T23:59:59Z')).not.toContain('OVERDUE');
    expect(await home('2090-02-01T00:00:00Z')).toContain('Posted · OVERDUE');
    const printable = (now: string) =>
      portalPrintableInvoice(database.db, access, due.id, { base, locale: 'en', now: new Date(now) });
    expect((await printable('2090-01-31T23:59:59Z'))?.overdue).toBe(false);
    expect((await printable('2090-02-01T00:00:00Z'))?.overdue).toBe(true);
  });

  it('offers the alert form on the running subscriptions, posting to the session, with why the last add was refused', async () => {
    const page = await portalHomePage(database.db, access, token, {
      base,
      locale: 'en',
      usageSource: undefined,
      alerts: { refused: 'the threshold is not a number.' },
    });
    expect(page).toContain(`action="${base}/portal/${token}/alerts?locale=en"`);
    expect(page).toContain(`<option value="${due.subscriptionId}">Gold plan</option>`);
    expect(page).toContain('The alert was not added: the threshold is not a number.');
  });

  it('lists every issued invoice and subscription of a customer who has more than ten', async () => {
    const { db } = database;
    const customerId = (
      await insertCustomer(db, orgId, { name: 'Many', country: 'CA', state_province: 'ON' })
    ).id;
    const productId = (await insertProduct(db, orgId, { unitPrice: '1' })).id;
    const numbers: string[] = [];
    for (let i = 0; i < 11; i++) {
      const subscriptionId = (
        await insertSubscription(db, orgId, { customerId, title: `Plan ${i}`, items: [{ productId }] })
      ).id;
      numbers.push(
        (await insertInvoice(db, orgId, { customerId, subscriptionId, items: [{ productId }] }))
          .invoiceNumber,
      );
    }
    const page = await portalHomePage(db, { ...access, customerId }, token, {
      base,
      locale: 'en',
      usageSource: undefined,
    });
    for (const number of numbers) expect(page).toContain(`>${number}<`);
    for (let i = 0; i < 11; i++) expect(page).toContain(`Plan ${i} <span`);
  });

  it('lists the newest 100 invoices of a customer who has more', async () => {
    const { db } = database;
    const customerId = (
      await insertCustomer(db, orgId, { name: 'Years', country: 'CA', state_province: 'ON' })
    ).id;
    const productId = (await insertProduct(db, orgId, { unitPrice: '1' })).id;
    const subscriptionId = (await insertSubscription(db, orgId, { customerId, items: [{ productId }] })).id;
    const numbers: string[] = [];
    for (let day = 1; day <= 101; day++) {
      const invoiceDate = new Date(Date.UTC(2030, 0, day)).toISOString().slice(0, 10);
      const invoice = await insertInvoice(db, orgId, {
        customerId,
        subscriptionId,
        invoiceDate,
        items: [{ productId }],
      });
      numbers.push(invoice.invoiceNumber);
    }
    const page = await portalHomePage(db, { ...access, customerId }, token, {
      base,
      locale: 'en',
      usageSource: undefined,
    });
    expect(page).not.toContain(`>${numbers[0]}<`);
    for (const number of numbers.slice(1)) expect(page).toContain(`>${number}<`);
  });

  it("links each credit note's printable document and PDF under the session", async () => {
    const { db } = database;
    const { rows } = await db.query<{ id: number }>('SELECT id FROM invoice_items WHERE invoice_id = $1', [
      due.id,
    ]);
    const note = await db.transaction((tx) =>
      createCreditNote(tx, {
        orgId,
        invoiceId: due.id,
        input: {
          reason: 'product_unsatisfactory',
          lines: [{ invoice_item_id: rows[0]!.id, amount: '1.00' }],
        },
      }),
    );
    const page = await portalHomePage(db, access, token, { base, locale: 'en', usageSource: undefined });
    const links = [...page.matchAll(/href="([^"]+)"/g)].map((match) => match[1]!.replace(/&amp;/g, '&'));
    const notePath = `${base}/portal/${token}/credit-notes/${note.id}`;
    expect(links).toContain(`${notePath}/print?locale=en`);
    expect(links).toContain(`${notePath}/pdf?locale=en`);
    expect(await portalPrintableCreditNote(db, access, note.id, { base, locale: 'en' })).toBeDefined();
  });

  it('finds no credit note for an id that is not a UUID', async () => {
    for (const noteId of ['not-a-uuid', '', '1']) {
      expect(
        await portalPrintableCreditNote(database.db, access, noteId, { base, locale: 'en' }),
      ).toBeUndefined();
    }
  });

  it("dates a hosted page's last day in the page's language", async () => {
    const printable = await portalPrintableInvoice(database.db, access, due.id, { base, locale: 'fr-CA' });
    const page = invoicePage(
      printable!,
      { base, locale: 'fr-CA' },
      { from: 'hosted', token: 'hinv_x', validUntil: new Date('2090-05-01T12:00:00Z') },
    );
    expect(page).toContain('mai 2090');
    expect(page).not.toContain('May');
  });
});
