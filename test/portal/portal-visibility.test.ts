import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postInvoice, withdrawInvoice } from '../../libs/billing/index.js';
import { openHostedInvoice } from '../../libs/portal/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import {
  insertCustomer,
  insertInvoice,
  insertProduct,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createSession, open, pathOf } from './support.js';

/**
 * What a customer's portal lists and what links open: only invoices ever issued to that
 * customer, newest first by date, each with what is still due on it. The plausible bugs: the
 * current status alone deciding (a draft withdrawn before posting shown with a balance due), the
 * order of creation or numbering standing in for the date, a query missing its customer filter.
 */
let api: TestApi;
let org: TestOrg;
let customerId: number;
let neighbourId: number;
let subscriptionId: number;
let product: number;

async function invoiceOf(
  customer: number,
  subscription: number,
  fixture: { invoiceDate: string; status?: 'DRAFT' | 'POSTED'; description?: string },
) {
  return insertInvoice(api.platform.db, org.orgId, {
    customerId: customer,
    subscriptionId: subscription,
    status: fixture.status ?? 'POSTED',
    invoiceDate: fixture.invoiceDate,
    periodStart: fixture.invoiceDate,
    dueDate: '2099-01-01',
    items: [
      { productId: product, description: fixture.description ?? 'Seats', quantity: '1', unitPrice: '40' },
    ],
  });
}

const withdraw = (invoiceId: string) =>
  api.platform.db.transaction((tx) => withdrawInvoice(tx, { invoiceId, orgId: org.orgId }));

/** The invoice numbers of the portal's list, top to bottom. */
function listed(page: string): string[] {
  return [...page.matchAll(/<th scope="row"><a [^>]*>(INV-\d+)<\/a><\/th>/g)].map((match) => match[1]!);
}

/** The list's row of `invoiceNumber`: its cells' text. */
function rowOf(page: string, invoiceNumber: string): string {
  const start = page.indexOf(`>${invoiceNumber}</a></th>`);
  expect(start, invoiceNumber).toBeGreaterThan(0);
  return page.slice(start, page.indexOf('</tr>', start));
}

beforeAll(async () => {
  api = await startTestApi();
  const { db } = api.platform;
  org = await createTestOrg(db);
  customerId = (
    await insertCustomer(db, org.orgId, { name: 'Visible Customer', country: 'CA', state_province: 'ON' })
  ).id;
  neighbourId = (
    await insertCustomer(db, org.orgId, { name: 'Neighbour Customer', country: 'CA', state_province: 'ON' })
  ).id;
  product = (await insertProduct(db, org.orgId, { name: 'Seats', sku: 'VIS-SEATS', unitPrice: '40' })).id;
  subscriptionId = (
    await insertSubscription(db, org.orgId, {
      customerId,
      title: 'Visible plan',
      items: [{ productId: product, quantity: 1, unitPrice: '40' }],
    })
  ).id;
});
afterAll(() => api?.close());

describe('the portal invoice list', () => {
  it('lists invoices newest first by invoice date, whatever order they were numbered and created in', async () => {
    // numbered (and created) November, then August, then October
    const november = await invoiceOf(customerId, subscriptionId, { invoiceDate: '2026-11-26' });
    const august = await invoiceOf(customerId, subscriptionId, { invoiceDate: '2026-08-26' });
    const october = await invoiceOf(customerId, subscriptionId, { invoiceDate: '2026-10-01' });
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const page = (await open(api, session.url)).body;
    expect(listed(page)).toEqual([november.invoiceNumber, october.invoiceNumber, august.invoiceNumber]);
  });

  it('lists invoices of one date newest created first, whatever their ids', async () => {
    const customer = (
      await insertCustomer(api.platform.db, org.orgId, {
        name: 'Same Day',
        country: 'CA',
        state_province: 'ON',
      })
    ).id;
    const subscription = (
      await insertSubscription(api.platform.db, org.orgId, {
        customerId: customer,
        items: [{ productId: product, quantity: 1, unitPrice: '40' }],
      })
    ).id;
    const sameDay = [];
    // one date, three periods (a subscription's period is invoiced once)
    for (const periodStart of ['2026-06-15', '2026-07-15', '2026-08-15']) {
      sameDay.push(
        await insertInvoice(api.platform.db, org.orgId, {
          customerId: customer,
          subscriptionId: subscription,
          status: 'POSTED',
          invoiceDate: '2026-09-15',
          periodStart,
          dueDate: '2099-01-01',
          items: [{ productId: product, description: 'Seats', quantity: '1', unitPrice: '40' }],
        }),
      );
    }
    // ids are random: created_at is made to run against them, so ordering by id alone lists them backwards
    sameDay.sort((a, b) => (a.id < b.id ? 1 : -1));
    for (const [i, invoice] of sameDay.entries()) {
      await api.platform.db.query('UPDATE invoices SET created_at = $2 WHERE id = $1', [
        invoice.id,
        new Date(Date.UTC(2026, 8, 15, 12, i)),
      ]);
    }
    const session = await createSession(api, org.apiKey, { customer_id: customer, locale: 'en' });
    const page = (await open(api, session.url)).body;
    expect(listed(page)).toEqual(sameDay.map((invoice) => invoice.invoiceNumber).reverse());
  });

  it('never shows a draft withdrawn before it was posted, nor opens it from a session or its hosted link', async () => {
    const draft = await invoiceOf(customerId, subscriptionId, {
      invoiceDate: '2026-12-01',
      status: 'DRAFT',
      description: 'Never issued line',
    });
    const withdrawn = await withdraw(draft.id);
    expect(withdrawn.status).toBe('WITHDRAWN');
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const page = (await open(api, session.url)).body;
    expect(page).not.toContain(draft.invoiceNumber);
    for (const suffix of ['', '/print', '/pdf']) {
      const response = await open(api, `${session.url}/invoices/${draft.id}${suffix}`);
      expect(response.statusCode, suffix).toBe(404);
      expect(response.body).not.toContain('Never issued line');
    }
    const hostedUrl = (await api.request({ path: `/invoices/${draft.id}`, key: org.apiKey })).json().data
      .hosted_url as string;
    for (const suffix of ['', '/print', '/pdf']) {
      const hosted = await api.app.inject({ method: 'GET', url: `${pathOf(hostedUrl)}${suffix}` });
      expect(hosted.statusCode, suffix).toBe(404);
      expect(hosted.body).not.toContain(draft.invoiceNumber);
    }
    // the link itself opens nothing: refusing it must not rest on the invoice query alone
    const token = hostedUrl.split('/').pop()!;
    expect((await openHostedInvoice(api.platform.db, token)).kind).toBe('unknown');
  });

  it('shows an invoice withdrawn after it was posted, with nothing due, on the list, its page and documents', async () => {
    const draft = await invoiceOf(customerId, subscriptionId, { invoiceDate: '2026-12-02', status: 'DRAFT' });
    await api.platform.db.transaction((tx) => postInvoice(tx, { invoiceId: draft.id, orgId: org.orgId }));
    await withdraw(draft.id);
    // the API keeps reporting the balance as the contract defines it: total - amount paid
    const read = (await api.request({ path: `/invoices/${draft.id}`, key: org.apiKey })).json().data;
    expect(read).toMatchObject({ status: 'WITHDRAWN', balance: '40.00000000' });

    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const row = rowOf((await open(api, session.url)).body, draft.invoiceNumber);
    expect(row).toContain('Withdrawn');
    expect(row).toContain('<td class="num">40.00 CAD</td>\n<td class="num">0.00 CAD</td>');

    const page = await open(api, `${session.url}/invoices/${draft.id}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<dt>Balance due</dt><dd>0.00 CAD</dd>');
    const printable = await open(api, `${session.url}/invoices/${draft.id}/print`);
    expect(printable.body).toContain('Balance due</td><td class="num">0.00 CAD</td>');
    const hosted = await api.app.inject({ method: 'GET', url: pathOf(read.hosted_url) });
    expect(hosted.statusCode).toBe(200);
    expect(hosted.body).toContain('<dt>Balance due</dt><dd>0.00 CAD</dd>');
  });

  it('shows what is still due on an open invoice', async () => {
    const open_ = await invoiceOf(customerId, subscriptionId, { invoiceDate: '2026-12-03' });
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const row = rowOf((await open(api, session.url)).body, open_.invoiceNumber);
    expect(row).toContain('<td class="num">40.00 CAD</td>\n<td class="num">40.00 CAD</td>');
  });

  it("shows none of another customer's subscriptions or invoices, of the same organization", async () => {
    const neighbourSubscription = await insertSubscription(api.platform.db, org.orgId, {
      customerId: neighbourId,
      title: 'Neighbour plan',
      items: [{ productId: product, quantity: 1, unitPrice: '40' }],
    });
    const neighbours = await invoiceOf(neighbourId, neighbourSubscription.id, { invoiceDate: '2026-12-31' });
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'en' });
    const page = (await open(api, session.url)).body;
    expect(page).toContain('Visible plan');
    expect(page).not.toContain('Neighbour plan');
    expect(listed(page)).not.toContain(neighbours.invoiceNumber);
    const { rows } = await api.platform.db.query<{ invoice_number: string }>(
      `SELECT invoice_number FROM invoices WHERE org_id = $1 AND customer_id = $2 AND posted_at IS NOT NULL`,
      [org.orgId, customerId],
    );
    expect(listed(page).sort()).toEqual(rows.map((row) => row.invoice_number).sort());
  });
});
