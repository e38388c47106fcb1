import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getInvoice } from '../../libs/invoices/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario, insertInvoice } from '../helpers/billing-fixtures.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createSession, open } from '../portal/support.js';

/**
 * A UUID is the same id in either case (Postgres compares uuids so), and every way in takes it
 * either way with the same answer: the path, the query, console flags and portal links. An
 * answer always spells ids in lower case. The plausible bug: rows found by the id as typed,
 * then matched in memory against it (the invoice without its lines).
 */
const run = promisify(execFile);
let api: TestApi;
let org: TestOrg;
let scenario: BillingScenario;
let invoice: { id: string; invoiceNumber: string };
let upper: string;
let workDir: string;

const LINES = ['Upper-case seats', 'Upper-case storage'];

beforeAll(async () => {
  api = await startTestApi();
  const { db } = api.platform;
  org = await createTestOrg(db);
  scenario = await insertBillingScenario(db, org.orgId);
  invoice = await insertInvoice(db, org.orgId, {
    customerId: scenario.customers.ontario.id,
    subscriptionId: scenario.subscriptions.active,
    status: 'PARTIALLY_PAID',
    items: [
      { productId: scenario.products.seats, description: LINES[0]!, quantity: '3', unitPrice: '20' },
      { productId: scenario.products.storage, description: LINES[1]!, quantity: '1', unitPrice: '5' },
    ],
    transactions: [{ type: 'PAYMENT', amount: '10.00000000' }],
  });
  upper = invoice.id.toUpperCase();
  expect(upper).not.toBe(invoice.id);
  workDir = await mkdtemp(path.join(tmpdir(), 'identifier-case-'));
});
afterAll(async () => {
  await api?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

const get = (path: string) => api.request({ path, key: org.apiKey });

async function pdfText(bytes: Buffer): Promise<string> {
  const file = path.join(workDir, `${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(file, bytes);
  return (await run('pdftotext', ['-layout', '-enc', 'UTF-8', file, '-'])).stdout;
}

describe('an upper-case UUID', () => {
  it('serves the same invoice, lines included, as JSON, printable HTML and PDF', async () => {
    const lower = await get(`/invoices/${invoice.id}`);
    const shouted = await get(`/invoices/${upper}`);
    expect(shouted.statusCode, shouted.body).toBe(200);
    expect(shouted.json().data.items.map((item: { description: string }) => item.description)).toEqual(LINES);
    expect(shouted.json()).toEqual(lower.json());
    expect(shouted.json().data.id).toBe(invoice.id);

    const html = await get(`/invoices/${upper}/html`);
    expect(html.statusCode).toBe(200);
    for (const line of LINES) expect(html.body).toContain(line);
    expect(html.body).toBe((await get(`/invoices/${invoice.id}/html`)).body);

    const pdf = await get(`/invoices/${upper}/pdf`);
    expect(pdf.statusCode).toBe(200);
    const text = await pdfText(pdf.rawPayload);
    for (const line of LINES) expect(text).toContain(line);

    const transactions = await get(`/invoices/${upper}/transactions`);
    expect(transactions.statusCode).toBe(200);
    expect(transactions.json()).toEqual((await get(`/invoices/${invoice.id}/transactions`)).json());
    expect(transactions.json().data).toHaveLength(1);
  });

  it('is matched in the domain by the row it found, not by the id as given', async () => {
    // below the boundaries that canonicalize: a lib called with the id as typed
    const read = await getInvoice(api.platform.db, org.orgId, upper);
    expect(read.id).toBe(invoice.id);
    expect(read.items.map((item) => item.description)).toEqual(LINES);
  });

  it('finds webhook endpoints and their events by path and by query filter', async () => {
    const created = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: org.apiKey,
      payload: { url: 'https://hooks.example.com/billing', events: ['invoice.*'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const endpoint = created.json().data as { id: string };
    const shouted = await get(`/webhook-endpoints/${endpoint.id.toUpperCase()}`);
    expect(shouted.statusCode).toBe(200);
    expect(shouted.json().data.id).toBe(endpoint.id);
    const filtered = await get(`/webhook-events?endpoint_id=${endpoint.id.toUpperCase()}`);
    expect(filtered.statusCode, filtered.body).toBe(200);
  });

  it('opens the invoice from a portal session with its lines, page, printable and PDF', async () => {
    const session = await createSession(api, org.apiKey, { customer_id: scenario.customers.ontario.id });
    const page = await open(api, `${session.url}/invoices/${upper}`);
    expect(page.statusCode).toBe(200);
    for (const line of LINES) expect(page.body).toContain(line);
    // the page's own links spell the id as the database does
    expect(page.body).toContain(`/invoices/${invoice.id}/print`);
    expect(page.body).not.toContain(upper);
    const printable = await open(api, `${session.url}/invoices/${upper}/print`);
    for (const line of LINES) expect(printable.body).toContain(line);
    const pdf = await open(api, `${session.url}/invoices/${upper}/pdf`);
    expect(pdf.statusCode).toBe(200);
    const text = await pdfText(pdf.rawPayload);
    for (const line of LINES) expect(text).toContain(line);
  });

  it('is taken by the console: invoice show, payment record', async () => {
    const console_ = inProcessConsole(() => ({ DATABASE_URL: api.database.url, LOG_LEVEL: 'silent' }));
    const shown = await console_('invoice', 'show', '--id', upper, '--org', String(org.orgId));
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.json().id).toBe(invoice.id);
    expect(shown.json().items.map((item: { description: string }) => item.description)).toEqual(LINES);

    const paid = await console_(
      'payment',
      'record',
      '--invoice',
      upper,
      '--amount',
      '1',
      '--org',
      String(org.orgId),
    );
    expect(paid.code, paid.stderr).toBe(0);
    expect(paid.json().invoice_id).toBe(invoice.id);
    expect(paid.json().invoice.items).toHaveLength(2);
  });
});
