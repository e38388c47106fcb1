import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayMoney } from '../../libs/i18n/index.js';
import { loadPrintableInvoice } from '../../libs/invoice-documents/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import {
  type BillingScenario,
  type InsertedInvoice,
  insertBillingScenario,
  insertCustomer,
  insertInvoice,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';

const run = promisify(execFile);

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;
let scenario: BillingScenario;
let hostile: InsertedInvoice;
let faraway: InsertedInvoice;
let longInvoice: InsertedInvoice;
let invoiceOfB: InsertedInvoice;
let workDir: string;

const SCRIPT = '<script>alert(1)</script>';
const MISSING_UUID = '00000000-0000-4000-8000-000000000000';

beforeAll(async () => {
  api = await startTestApi();
  const { db } = api.platform;
  orgA = await createTestOrg(db, { name: 'Érable Logiciels Inc.' });
  orgB = await createTestOrg(db);
  await db.query(
    `UPDATE organizations SET address_line1 = '500 boul. René-Lévesque O', city = 'Montréal',
       state_province = 'QC', postal_code = 'H2Z 1W7', country = 'CA', tax_id = 'GST 123456789 RT0001',
       email = 'billing@erable.example' WHERE id = $1`,
    [orgA.orgId],
  );
  scenario = await insertBillingScenario(db, orgA.orgId);
  const { seats } = scenario.products;

  const attacker = await insertCustomer(db, orgA.orgId, {
    name: SCRIPT,
    address_line1: '"><img src=x onerror=alert(2)>',
    city: "O'Brien & Sons",
    country: 'US',
  });
  const attackerSubscription = await insertSubscription(db, orgA.orgId, {
    customerId: attacker.id,
    items: [{ productId: seats }],
  });
  hostile = await insertInvoice(db, orgA.orgId, {
    customerId: attacker.id,
    subscriptionId: attackerSubscription.id,
    status: 'POSTED',
    items: [{ productId: seats, description: '<b>bold</b> & "quoted"', quantity: '1', unitPrice: '10' }],
  });

  const foreign = await insertCustomer(db, orgA.orgId, {
    name: 'Łukasz Żółć 😀',
    contact_name: '李小龍 (山田太郎)',
    city: 'Kraków',
    country: 'PL',
  });
  const foreignSubscription = await insertSubscription(db, orgA.orgId, {
    customerId: foreign.id,
    items: [{ productId: seats }],
  });
  faraway = await insertInvoice(db, orgA.orgId, {
    customerId: foreign.id,
    subscriptionId: foreignSubscription.id,
    status: 'PAID',
    items: [{ productId: seats, description: 'Ŝtandard plan — 東京', quantity: '1', unitPrice: '10' }],
  });
  longInvoice = await insertInvoice(db, orgA.orgId, {
    customerId: foreign.id,
    subscriptionId: foreignSubscription.id,
    status: 'DRAFT',
    items: Array.from({ length: 60 }, (_, n) => ({
      productId: seats,
      description: `Line ${n + 1}: a description long enough to wrap onto a second line of the items table`,
      quantity: '3',
      unitPrice: '1.25',
    })),
  });

  const customerOfB = await insertCustomer(db, orgB.orgId, { name: 'B' });
  const bProduct = await db.query<{ id: number }>(
    "INSERT INTO products (org_id, name, pricing_type) VALUES ($1, 'B product', 'recurring') RETURNING id",
    [orgB.orgId],
  );
  const subscriptionOfB = await insertSubscription(db, orgB.orgId, {
    customerId: customerOfB.id,
    items: [{ productId: bProduct.rows[0]!.id }],
  });
  invoiceOfB = await insertInvoice(db, orgB.orgId, {
    customerId: customerOfB.id,
    subscriptionId: subscriptionOfB.id,
    items: [{ productId: bProduct.rows[0]!.id }],
  });
  workDir = await mkdtemp(path.join(tmpdir(), 'invoice-pdf-'));
});
afterAll(async () => {
  await api?.close();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

async function pdfText(bytes: Buffer): Promise<string> {
  const file = path.join(workDir, `${Math.random().toString(36).slice(2)}.pdf`);
  await writeFile(file, bytes);
  const { stdout } = await run('pdftotext', ['-layout', '-enc', 'UTF-8', file, '-']);
  return stdout;
}

const get = (invoiceId: string, kind: 'html' | 'pdf') =>
  api.request({ path: `/invoices/${invoiceId}/${kind}`, key: orgA.apiKey });

describe('loadPrintableInvoice', () => {
  it('marks an invoice overdue from the first instant after its due date, not during it', async () => {
    const { db } = api.platform;
    const customer = await insertCustomer(db, orgA.orgId, { name: 'Due mid-month', country: 'CA' });
    const subscription = await insertSubscription(db, orgA.orgId, {
      customerId: customer.id,
      items: [{ productId: scenario.products.seats }],
    });
    const invoice = await insertInvoice(db, orgA.orgId, {
      customerId: customer.id,
      subscriptionId: subscription.id,
      status: 'POSTED',
      invoiceDate: '2026-02-14',
      dueDate: '2026-03-14',
      items: [{ productId: scenario.products.seats, unitPrice: '10' }],
    });
    const overdueAt = async (now: string) =>
      (await loadPrintableInvoice(db, orgA.orgId, invoice.id, { now: new Date(now) })).overdue;
    expect(await overdueAt('2026-03-14T23:59:59.999Z')).toBe(false);
    expect(await overdueAt('2026-03-15T00:00:00.000Z')).toBe(true);
  });
});

describe('GET /invoices/{invoice_id}/html', () => {
  it('is a printable document with seller, customer, dates, status, items and totals', async () => {
    const invoice = scenario.invoices.PARTIALLY_PAID;
    const response = await get(invoice.id, 'html');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    // a document with a customer's data is kept by no shared cache and stored by no browser
    expect(response.headers['cache-control']).toBe('private, no-store');
    expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    const html = response.body;
    expect(html).toMatch(/^<!doctype html>/);
    for (const text of [
      'Érable Logiciels Inc.',
      '500 boul. René-Lévesque O',
      'Tax ID: GST 123456789 RT0001',
      'Amélie Côté',
      '1000 rue Sainte-Catherine O',
      'Montréal, QC  H3B 1A1',
      'Canada',
      invoice.invoiceNumber,
      'Partially paid',
      'Seats (5 x Team plan)',
      'GST_QST',
      '49.99',
      '12,345.5',
      '0.00125',
      '37.4300125',
      '265.381875', // subtotal
      '39.74093578', // tax
      '305.12281078', // total
      '152.56140539', // paid (half)
      'Balance due',
      'CAD',
    ]) {
      expect(html, text).toContain(text);
    }
    expect(html).toMatch(/Invoice date<\/dt><dd>[A-Z][a-z]+ \d{1,2}, \d{4}</);
    expect(html).toMatch(/Due date<\/dt><dd>[A-Z][a-z]+ \d{1,2}, \d{4}</);
    // due in 2025 with a balance left: overdue is derived, not a status
    expect(html).toContain('OVERDUE');
  });

  it('escapes everything that comes from the database', async () => {
    const html = (await get(hostile.id, 'html')).body;
    expect(html).not.toContain(SCRIPT);
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<b>bold</b>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&quot;&gt;&lt;img src=x onerror=alert(2)&gt;');
    expect(html).toContain('O&#39;Brien &amp; Sons');
    expect(html).toContain('&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;');
    expect(html.match(/<script/gi)).toBeNull();
  });

  it('keeps any script out of the page: it has no script element at all', async () => {
    const html = (await get(scenario.invoices.PAID.id, 'html')).body;
    expect(html).not.toMatch(/<script|on\w+=/i);
    expect(html).not.toContain('OVERDUE');
  });

  describe('common route checks', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/invoices/${scenario.invoices.POSTED.id}/html` },
        crossOrg: { path: (id) => `/invoices/${id}/html`, foreignId: invoiceOfB.id, missingId: MISSING_UUID },
      }),
      { namesRecord: true },
    );
  });
});

describe('GET /invoices/{invoice_id}/pdf', () => {
  it('is a real PDF named after the invoice number, with the same content as the HTML', async () => {
    const invoice = scenario.invoices.PARTIALLY_REFUNDED;
    const response = await get(invoice.id, 'pdf');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/pdf');
    expect(response.headers['content-disposition']).toBe(
      `attachment; filename="${invoice.invoiceNumber}.pdf"`,
    );
    expect(response.headers['cache-control']).toBe('private, no-store');
    const bytes = response.rawPayload;
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(bytes.subarray(-6).toString('latin1')).toMatch(/%%EOF\s*$/);
    const text = await pdfText(bytes);
    for (const expected of [
      invoice.invoiceNumber,
      'Érable Logiciels Inc.',
      'GST 123456789 RT0001',
      'Amélie Côté',
      'Montréal, QC H3B 1A1',
      'Partially refunded',
      'Seats (5 x Team plan)',
      'GST_QST',
      '12,345.5',
      '265.381875',
      '305.12281078 CAD',
      'Refunded',
      'Balance due',
    ]) {
      expect(text.replace(/ {2,}/g, ' '), expected).toContain(expected);
    }
  });

  it('prints what was paid, and a balance due only while the invoice can be paid', async () => {
    const lineOf = (text: string, label: string) =>
      text
        .split('\n')
        .map((line) => line.replace(/\s+/g, ' ').trim())
        .find((line) => line.startsWith(`${label} `));
    const partial = scenario.invoices.PARTIALLY_PAID;
    const partialText = await pdfText((await get(partial.id, 'pdf')).rawPayload);
    expect(lineOf(partialText, 'Paid')).toBe(`Paid ${displayMoney(partial.amountPaid, 'CAD', 'en')}`);
    // WITHDRAWN: nothing is left to pay, whatever the balance (amountDueOf)
    const withdrawn = await pdfText((await get(scenario.invoices.WITHDRAWN.id, 'pdf')).rawPayload);
    expect(lineOf(withdrawn, 'Balance due')).toBe('Balance due 0.00 CAD');
  });

  it('prints names beyond WinAnsi in DejaVu Sans, Chinese and Japanese in Noto Sans SC', async () => {
    const response = await get(faraway.id, 'pdf');
    expect(response.statusCode).toBe(200);
    const pdf = response.rawPayload.toString('latin1');
    expect(pdf).toMatch(/\/BaseFont \/[A-Z]{6}\+DejaVuSans\b/);
    expect(pdf).toMatch(/\/BaseFont \/[A-Z]{6}\+NotoSansSC/);
    const text = await pdfText(response.rawPayload);
    expect(text).toContain('Łukasz Żółć 😀');
    expect(text).toContain('李小龍 (山田太郎)');
    expect(text).toContain('Kraków');
    // a CJK piece prints whole in Noto Sans SC, which has no Ŝ: it loses its accent
    expect(text).toContain('Standard plan — 東京');
    const html = (await get(faraway.id, 'html')).body;
    expect(html).toContain('Łukasz Żółć 😀');
    expect(html).toContain('李小龍 (山田太郎)');
  });

  it('flows a long invoice onto further pages', async () => {
    const response = await get(longInvoice.id, 'pdf');
    expect(response.statusCode).toBe(200);
    const text = await pdfText(response.rawPayload);
    expect(text.split('\f').filter((page) => page.trim()).length).toBeGreaterThan(1);
    expect(text).toContain('Line 1:');
    expect(text).toContain('Line 60:');
    expect(text).toContain('225.00 CAD');
  });

  describe('common route checks', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: orgA.apiKey,
        request: { method: 'GET', path: `/invoices/${scenario.invoices.DRAFT.id}/pdf` },
        crossOrg: { path: (id) => `/invoices/${id}/pdf`, foreignId: invoiceOfB.id, missingId: MISSING_UUID },
      }),
      { namesRecord: true },
    );
  });
});
