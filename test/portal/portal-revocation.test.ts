import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openHostedInvoice, openPortalSession } from '../../libs/portal/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createSession, open, pathOf } from './support.js';

/**
 * Links for people can be taken back: DELETE /portal-sessions/{id} revokes a session, and
 * POST /invoices/{id}/rotate-hosted-url replaces an invoice's hosted link. A link taken back
 * answers an error page that shows no data, on every page and document it used to open. And a
 * link is refused at exactly the instant it expires.
 */
let api: TestApi;
let org: TestOrg;
let other: TestOrg;
let scenario: BillingScenario;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  other = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, org.orgId);
});
afterAll(() => api?.close());

const revoke = (id: string, key = org.apiKey) =>
  api.request({ method: 'DELETE', path: `/portal-sessions/${id}`, key });

/** Asserts a page that refuses: `status`, HTML, and none of the customer's data. */
function expectRefused(
  response: { statusCode: number; body: string; headers: Record<string, unknown> },
  status: number,
) {
  expect(response.statusCode).toBe(status);
  expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(response.headers['cache-control']).toBe('no-store');
  expect(response.body).not.toContain('Amélie');
  expect(response.body).not.toContain('INV-');
}

describe('DELETE /portal-sessions/{id}', () => {
  it('revokes the session: its home, invoice pages and documents answer 410 with no data', async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      locale: 'en',
    });
    const invoicePath = `${session.url}/invoices/${scenario.invoices.POSTED.id}`;
    expect((await open(api, session.url)).statusCode).toBe(200);
    expect((await open(api, invoicePath)).statusCode).toBe(200);

    const revoked = await revoke(session.id.toUpperCase());
    expect(revoked.statusCode, revoked.body).toBe(204);
    expect(revoked.body).toBe('');
    for (const url of [session.url, invoicePath, `${invoicePath}/print`, `${invoicePath}/pdf`]) {
      const response = await open(api, url);
      expectRefused(response, 410);
      expect(response.body).toContain('revoked');
    }
    // again: nothing left to revoke
    expect((await revoke(session.id)).statusCode).toBe(404);
  });

  it("answers 404 for another organization's session, an unknown id and a malformed one, and 401 without a key", async () => {
    const session = await createSession(api, org.apiKey, { customer_id: scenario.customers.quebec.id });
    const foreign = await revoke(session.id, other.apiKey);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json()).toMatchObject({ error_code: 'NOT_FOUND' });
    expect((await open(api, session.url)).statusCode).toBe(200);
    expect((await revoke('6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11')).statusCode).toBe(404);
    expect((await revoke('not-a-session')).statusCode).toBe(404);
    const anonymous = await api.request({ method: 'DELETE', path: `/portal-sessions/${session.id}` });
    expect(anonymous.statusCode).toBe(401);
    expect((await open(api, session.url)).statusCode).toBe(200);
  });
});

describe('POST /invoices/{id}/rotate-hosted-url', () => {
  const rotate = (invoiceId: string, key = org.apiKey) =>
    api.request({ method: 'POST', path: `/invoices/${invoiceId}/rotate-hosted-url`, key });
  const hostedUrlOf = async (invoiceId: string) =>
    (await api.request({ path: `/invoices/${invoiceId}`, key: org.apiKey })).json().data.hosted_url as string;
  const listedUrlOf = async (invoiceId: string) => {
    const page = await api.request({ path: '/invoices?limit=100', key: org.apiKey });
    return page.json().data.find((invoice: { id: string }) => invoice.id === invoiceId).hosted_url as string;
  };

  it('answers the invoice with a new hosted_url; every earlier link answers 404 with no data', async () => {
    const invoice = scenario.invoices.PARTIALLY_PAID;
    const first = await hostedUrlOf(invoice.id);
    // the list keeps renderings of invoices in memory: it must not keep the old link
    expect(await listedUrlOf(invoice.id)).toBe(first);
    const untouched = await hostedUrlOf(scenario.invoices.POSTED.id);
    expect((await open(api, first)).statusCode).toBe(200);

    const rotated = await rotate(invoice.id);
    expect(rotated.statusCode, rotated.body).toBe(200);
    const second = rotated.json().data.hosted_url as string;
    expect(rotated.json().data).toMatchObject({ id: invoice.id, status: 'PARTIALLY_PAID' });
    expect(second).not.toBe(first);
    expect(second).toMatch(/\/portal\/invoice\/hinv_[A-Za-z0-9_-]{64}$/);
    expect(await hostedUrlOf(invoice.id)).toBe(second);
    expect(await listedUrlOf(invoice.id)).toBe(second);

    for (const suffix of ['', '/print', '/pdf']) {
      expectRefused(await open(api, `${first}${suffix}`), 404);
      const opened = await open(api, `${second}${suffix}`);
      expect(opened.statusCode, suffix).toBe(200);
    }
    expect((await open(api, second)).body).toContain(invoice.invoiceNumber);
    // the organization's other links still open
    expect(await hostedUrlOf(scenario.invoices.POSTED.id)).toBe(untouched);
    expect((await open(api, untouched)).statusCode).toBe(200);

    // a second rotation takes back the second link too
    const third = (await rotate(invoice.id)).json().data.hosted_url as string;
    expect(new Set([first, second, third]).size).toBe(3);
    expect((await open(api, second)).statusCode).toBe(404);
    expect((await open(api, first)).statusCode).toBe(404);
    expect((await open(api, third)).statusCode).toBe(200);
  });

  it("is the console's invoice rotate-hosted-url too, and 404 for another organization's invoice", async () => {
    const invoice = scenario.invoices.PAID;
    const before = await hostedUrlOf(invoice.id);
    const console_ = inProcessConsole(() => ({ DATABASE_URL: api.database.url, LOG_LEVEL: 'silent' }));
    const rotated = await console_('invoice', 'rotate-hosted-url', '--id', invoice.id);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(new URL(rotated.json().hosted_url).pathname).toBe(new URL(await hostedUrlOf(invoice.id)).pathname);
    expect((await api.app.inject({ method: 'GET', url: pathOf(before) })).statusCode).toBe(404);

    const foreign = await rotate(invoice.id, other.apiKey);
    expect(foreign.statusCode).toBe(404);
    expect((await rotate('not-an-invoice')).statusCode).toBe(404);
  });
});

describe('the contract', () => {
  it('documents both routes in openapi.json and llms.txt', async () => {
    const document = (await api.request({ path: '/openapi.json', key: org.apiKey })).json();
    expect(document.paths['/portal-sessions/{session_id}'].delete.responses).toHaveProperty('204');
    expect(
      document.paths['/invoices/{invoice_id}/rotate-hosted-url'].post.responses['200'].content,
    ).toBeDefined();
    const llms = (await api.request({ path: '/llms.txt' })).body;
    expect(llms).toContain('DELETE /portal-sessions/{session_id}');
    expect(llms).toContain('POST /invoices/{invoice_id}/rotate-hosted-url');
  });
});

describe('the expiry instant', () => {
  it('refuses a portal session at exactly its expiry instant, and grants it a millisecond before', async () => {
    const session = await createSession(api, org.apiKey, {
      customer_id: scenario.customers.quebec.id,
      expires_in: 60,
    });
    const token = session.url.split('/').pop()!;
    const expiresAt = new Date(session.expires_at);
    const { db } = api.platform;
    expect((await openPortalSession(db, token, new Date(expiresAt.getTime() - 1))).kind).toBe('granted');
    expect((await openPortalSession(db, token, expiresAt)).kind).toBe('expired');
    expect((await openPortalSession(db, token, new Date(expiresAt.getTime() + 1))).kind).toBe('expired');
  });

  it('refuses a hosted link at exactly the end of its 90 days after the invoice closed', async () => {
    const invoice = scenario.invoices.PAID;
    const { db } = api.platform;
    const { rows } = await db.query<{ closed_at: Date }>('SELECT closed_at FROM invoices WHERE id = $1', [
      invoice.id,
    ]);
    const end = rows[0]!.closed_at.getTime() + 90 * 86_400_000;
    const token = (await api.request({ path: `/invoices/${invoice.id}`, key: org.apiKey }))
      .json()
      .data.hosted_url.split('/')
      .pop() as string;
    expect((await openHostedInvoice(db, token, new Date(end - 1))).kind).toBe('granted');
    expect((await openHostedInvoice(db, token, new Date(end))).kind).toBe('expired');
  });
});
