import { execFileSync } from 'node:child_process';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource } from '../../libs/billing/index.js';
import { displayMoney, messagesFor } from '../../libs/i18n/index.js';
import type { CreditNote } from '../../libs/schemas/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { customerIn, productIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { launchChromium, type TestBrowser, watchedPage as watchedBrowserPage } from '../helpers/browser.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createSession, open } from './support.js';

/**
 * Credit notes in the portal (Chromium, test/helpers/browser.ts): the customer's notes are listed
 * with their documents, in English and Canadian French; another customer's note opens nothing.
 */

let api: TestApi;
let org: TestOrg;
let origin: string;
let browser: TestBrowser;
let context: BrowserContext;
let customerId: number;
let otherCustomerId: number;
let invoiceNumber: string;
let notes: CreditNote[];

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  const db = api.platform.db;
  const product = await productIn(db, org.orgId, {
    name: 'Forfait',
    unit_price: '25.00',
    pricing_type: 'recurring',
  });
  customerId = await customerIn(db, org.orgId, { name: 'Boulangerie Côté', state_province: 'QC' });
  otherCustomerId = await customerIn(db, org.orgId, { name: 'Other Inc.', state_province: 'ON' });
  const subscription = await subscribe(db, org.orgId, {
    customer_id: customerId,
    items: [{ product_id: product, quantity: 2 }],
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  const billed = await runBilling(db, {
    usage: usageSource(new PostgresUsageAggregator(db)),
    orgId: org.orgId,
    subscriptionIds: [subscription.id],
    now: new Date('2026-02-01T00:00:00Z'),
  });
  const invoice = (await api.request({ path: `/invoices/${billed.invoice_ids[0]}`, key: org.apiKey })).json()
    .data;
  invoiceNumber = invoice.invoice_number;
  notes = [];
  for (const [amount, reason] of [
    ['10.00', 'order_change'],
    ['4.00', 'duplicate'],
  ]) {
    const response = await api.request({
      method: 'POST',
      path: `/invoices/${invoice.id}/credit-notes`,
      key: org.apiKey,
      payload: { reason, lines: [{ invoice_item_id: invoice.items[0].id, amount }] },
    });
    expect(response.statusCode, response.body).toBe(201);
    notes.push(response.json().data);
  }
  origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
  browser = await launchChromium({ acceptDownloads: true });
  context = browser.context;
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

async function watchedPage(): Promise<{ page: Page; problems: string[] }> {
  return watchedBrowserPage(context, {
    ignoreFailed: (url) => url.endsWith('/pdf') || url.includes('/pdf?'),
  });
}

function onServer(url: string): string {
  const parsed = new URL(url);
  return `${origin}${parsed.pathname}${parsed.search}`;
}

describe('credit notes in the portal', () => {
  it('lists each note with its invoice, reason and total, in en and fr-CA, and opens its printable document', async () => {
    for (const locale of ['en', 'fr-CA'] as const) {
      const m = messagesFor(locale);
      const session = await createSession(api, org.apiKey, { customer_id: customerId, locale });
      const { page, problems } = await watchedPage();
      const notFound: string[] = [];
      page.on('response', (response) => {
        if (response.status() === 404) notFound.push(new URL(response.url()).pathname);
      });
      await context.route('**/favicon.ico', (route) => route.fulfill({ status: 204 }));
      await page.goto(onServer(session.url));
      const section = page.locator('section[aria-labelledby="credit-notes"]');
      expect(await section.locator('h2').textContent()).toBe(m.creditNotes);
      const rows = (await section.locator('tbody tr').allTextContents()).map((row) =>
        row.replace(/\s+/g, ' '),
      );
      const money = (amount: string) => displayMoney(amount, 'CAD', locale).replace(/\s+/g, ' ');
      // newest first: 4.00 + GST 0.20 + QST 0.399 -> 0.40 = 4.60; 10.00 + 0.50 + 1.00 = 11.50
      expect(rows).toHaveLength(2);
      expect(rows[0]).toContain(notes[1]!.number);
      expect(rows[0]).toContain(invoiceNumber);
      expect(rows[0]).toContain(m.creditNoteReasons.duplicate!);
      expect(rows[0]).toContain(money('4.60'));
      expect(rows[1]).toContain(notes[0]!.number);
      expect(rows[1]).toContain(money('11.50'));

      // the printable credit note, by its link
      await Promise.all([
        page.waitForURL(/\/credit-notes\/[0-9a-f-]{36}\/print\?locale=/),
        page.getByLabel(m.printableCreditNoteOf(notes[0]!.number)).click(),
      ]);
      expect(await page.locator('h1').textContent()).toBe(m.creditNoteTitle);
      const body = (await page.locator('body').textContent())!.replace(/\s+/g, ' ');
      expect(body).toContain(notes[0]!.number);
      expect(body).toContain(m.taxNames.QST!);
      // the printable document is one self-contained file: nothing it asks for is missing (the
      // browser's own /favicon.ico request aside, answered below)
      expect(notFound).toEqual([]);
      expect(problems).toEqual([]);
      await page.close();
    }
  });

  it('downloads the PDF of a note: it says what the list says', async () => {
    const session = await createSession(api, org.apiKey, { customer_id: customerId, locale: 'fr-CA' });
    const { page, problems } = await watchedPage();
    await page.goto(onServer(session.url));
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByLabel(messagesFor('fr-CA').creditNotePdfOf(notes[1]!.number)).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${notes[1]!.number}.pdf`);
    const text = execFileSync('pdftotext', ['-layout', await download.path(), '-'], {
      encoding: 'utf8',
    }).replace(/\s+/g, ' ');
    for (const expected of [
      'NOTE DE CRÉDIT',
      notes[1]!.number,
      invoiceNumber,
      'Facturation en double',
      'TPS',
      'TVQ',
    ]) {
      expect(text, expected).toContain(expected);
    }
    expect(text).toContain(displayMoney('4.60', 'CAD', 'fr-CA').replace(/\s+/g, ' '));
    expect(problems).toEqual([]);
    await page.close();
  });

  it("another customer's session lists no notes and opens none of them", async () => {
    const session = await createSession(api, org.apiKey, { customer_id: otherCustomerId, locale: 'en' });
    const home = await open(api, session.url);
    expect(home.statusCode).toBe(200);
    expect(home.body).toContain(messagesFor('en').noCreditNotes);
    expect(home.body).not.toContain(notes[0]!.number);
    const path = new URL(session.url).pathname;
    for (const suffix of ['print', 'pdf']) {
      const response = await api.app.inject({
        method: 'GET',
        url: `${path}/credit-notes/${notes[0]!.id}/${suffix}`,
      });
      expect(response.statusCode, suffix).toBe(404);
      expect(response.body).not.toContain(notes[0]!.number);
    }
  });
});
