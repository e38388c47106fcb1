import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCreditNote, runBilling, usageSource } from '../../libs/billing/index.js';
import { displayDate, displayMoney } from '../../libs/i18n/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import type { CreditNote, InvoiceRecord } from '../../libs/schemas/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { customerIn, productIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/*
 * A credit note's HTML and PDF (libs/invoice-documents), in English and Canadian French, and the
 * invoice's documents listing its notes. Quebec customer: GST and QST are printed apart.
 */

const run = promisify(execFile);
let api: TestApi;
let org: TestOrg;
let other: TestOrg;
let invoice: InvoiceRecord;
let notes: CreditNote[];
let workDir: string;

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  org = await createTestOrg(api.platform.db);
  other = await createTestOrg(api.platform.db);
  const db = api.platform.db;
  const product = await productIn(db, org.orgId, {
    name: 'Forfait Érable',
    unit_price: '33.33',
    pricing_type: 'recurring',
    currency: 'CAD',
  });
  const customerId = await customerIn(db, org.orgId, { name: 'Café Québécois', state_province: 'QC' });
  const subscription = await subscribe(db, org.orgId, {
    customer_id: customerId,
    items: [{ product_id: product, quantity: 3 }],
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  const billed = await runBilling(db, {
    usage: usageSource(new PostgresUsageAggregator(db)),
    orgId: org.orgId,
    subscriptionIds: [subscription.id],
    now: new Date('2026-02-01T00:00:00Z'),
  });
  invoice = await getInvoice(db, org.orgId, billed.invoice_ids[0]!);
  notes = [];
  for (const [amount, memo] of [
    ['10.00', 'Panne du 12 janvier'],
    ['5.00', undefined],
  ] as const) {
    notes.push(
      await db.transaction((tx) =>
        createCreditNote(tx, {
          orgId: org.orgId,
          invoiceId: invoice.id,
          input: {
            reason: 'product_unsatisfactory',
            lines: [{ invoice_item_id: invoice.items[0]!.id, amount }],
            ...(memo ? { memo } : {}),
          },
        }),
      ),
    );
  }
  workDir = await mkdtemp(path.join(tmpdir(), 'credit-note-pdf-'));
}, 60_000);
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

const get = (urlPath: string, key = org.apiKey) => api.request({ path: urlPath, key });
const unescapeHtml = (html: string) => html.replace(/&#39;/g, "'").replace(/&amp;/g, '&');

describe('credit note documents', () => {
  it('HTML in English: number, invoice, reason, memo, lines, tax by component, totals', async () => {
    const note = notes[0]!;
    const response = await get(`/credit-notes/${note.id}/html`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.headers['cache-control']).toBe('private, no-store');
    const html = unescapeHtml(response.body);
    // 10.00: GST 0.50, QST 0.9975 -> 1.00; total 11.50
    for (const text of [
      'CREDIT NOTE',
      note.number,
      invoice.invoice_number,
      'Product unsatisfactory',
      'Panne du 12 janvier',
      'Café Québécois',
      invoice.items[0]!.description,
      `<td>GST</td><td class="num">${displayMoney('0.5', 'CAD', 'en')}</td>`,
      `<td>QST</td><td class="num">${displayMoney('1', 'CAD', 'en')}</td>`,
      displayMoney('11.5', 'CAD', 'en'),
      'Applied to the invoice',
    ]) {
      expect(html).toContain(text);
    }
  });

  it('HTML and PDF in Canadian French', async () => {
    const note = notes[0]!;
    const html = unescapeHtml((await get(`/credit-notes/${note.id}/html?locale=fr-CA`)).body);
    for (const text of [
      'NOTE DE CRÉDIT',
      'TPS',
      'TVQ',
      'Produit insatisfaisant',
      displayMoney('11.5', 'CAD', 'fr-CA'),
    ]) {
      expect(html).toContain(text);
    }
    expect(html).toContain('<html lang="fr-CA">');
    const response = await get(`/credit-notes/${note.id}/pdf?locale=fr-CA`);
    expect(response.statusCode).toBe(200);
    const text = await pdfText(response.rawPayload);
    for (const expected of ['NOTE DE CRÉDIT', note.number, 'TPS', 'TVQ', 'Porté au crédit de votre compte']) {
      expect(text).toContain(expected);
    }
    // pdftotext gives the no-break spaces of French amounts back as plain ones
    for (const amount of ['11.5', '1']) {
      expect(text.replace(/\s+/g, ' ')).toContain(displayMoney(amount, 'CAD', 'fr-CA').replace(/\s+/g, ' '));
    }
  });

  it("names the seller's and the customer's countries in the document's language", async () => {
    // both addresses are written in the locale asked for, as the labels around them
    const db = api.platform.db;
    const note = notes[0]!;
    const before = await db.query<{ country: string; tax_id: string | null }>(
      'SELECT country, tax_id FROM organizations WHERE id = $1',
      [org.orgId],
    );
    await db.query(`UPDATE organizations SET country = 'US', tax_id = 'EIN-12' WHERE id = $1`, [org.orgId]);
    await db.query(`UPDATE customers SET country = 'DE' WHERE org_id = $1 AND id = $2`, [
      org.orgId,
      note.customer_id,
    ]);
    try {
      const html = unescapeHtml((await get(`/credit-notes/${note.id}/html?locale=fr-CA`)).body);
      expect(html).toContain('<p>États-Unis</p>');
      expect(html).toContain('<p>No de taxe : EIN-12</p>');
      expect(html).toContain('<p>Allemagne</p>');
      const invoiceHtml = unescapeHtml((await get(`/invoices/${invoice.id}/html?locale=fr-CA`)).body);
      expect(invoiceHtml).toContain('<p>États-Unis</p>');
    } finally {
      await db.query('UPDATE organizations SET country = $2, tax_id = $3 WHERE id = $1', [
        org.orgId,
        before.rows[0]!.country,
        before.rows[0]!.tax_id,
      ]);
      await db.query(`UPDATE customers SET country = 'CA' WHERE org_id = $1 AND id = $2`, [
        org.orgId,
        note.customer_id,
      ]);
    }
  });

  it('PDF in English, named after the number', async () => {
    const note = notes[1]!;
    const response = await get(`/credit-notes/${note.id}/pdf`);
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('application/pdf');
    expect(response.headers['content-disposition']).toBe(`attachment; filename="${note.number}.pdf"`);
    expect(response.headers['cache-control']).toBe('private, no-store');
    expect(response.rawPayload.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const text = await pdfText(response.rawPayload);
    // 5.00: GST 0.25, QST 0.49875 -> 0.50; total 5.75
    for (const expected of [
      'CREDIT NOTE',
      note.number,
      invoice.invoice_number,
      'GST',
      'QST',
      displayMoney('5.75', 'CAD', 'en'),
      'Total credited',
    ]) {
      expect(text).toContain(expected);
    }
  });

  it("the invoice's HTML and PDF list its notes: number, date, total", async () => {
    const html = (await get(`/invoices/${invoice.id}/html`)).body;
    const pdf = await pdfText((await get(`/invoices/${invoice.id}/pdf`)).rawPayload);
    const frHtml = (await get(`/invoices/${invoice.id}/html?locale=fr-CA`)).body;
    expect(html).toContain('Credit notes');
    expect(frHtml).toContain('Notes de crédit');
    for (const note of notes) {
      const date = displayDate(note.created_at.slice(0, 10), 'en');
      expect(html).toContain(
        `<tr><td>${note.number}</td><td>${date}</td><td class="num">${displayMoney(note.total, 'CAD', 'en')}</td></tr>`,
      );
      expect(pdf).toContain(note.number);
      expect(pdf).toContain(displayMoney(note.total, 'CAD', 'en'));
      expect(frHtml).toContain(displayMoney(note.total, 'CAD', 'fr-CA'));
    }
    // oldest first, as they were issued
    const [first, second] = notes.map((note) => `<td>${note.number}</td>`);
    expect(html.indexOf(first!)).toBeLessThan(html.indexOf(second!));
    expect(pdf.indexOf(notes[0]!.number)).toBeLessThan(pdf.indexOf(notes[1]!.number));
  });

  it("the invoice's PDF is printed in the locale asked for, English by default", async () => {
    const french = await get(`/invoices/${invoice.id}/pdf?locale=fr-CA`);
    expect(french.statusCode).toBe(200);
    const frText = (await pdfText(french.rawPayload)).replace(/\s+/g, ' ');
    for (const label of ['FACTURE', 'Sous-total', 'NOTES DE CRÉDIT']) expect(frText).toContain(label);
    expect(frText).not.toContain('Subtotal');
    // pdftotext gives the no-break spaces of French amounts back as plain ones
    expect(frText).toContain(displayMoney(notes[0]!.total, 'CAD', 'fr-CA').replace(/\s+/g, ' '));
    const english = (await pdfText((await get(`/invoices/${invoice.id}/pdf`)).rawPayload)).replace(
      /\s+/g,
      ' ',
    );
    expect(english).toContain('Subtotal');
    expect(english).not.toContain('Sous-total');
  });

  it("404 for another organization's note; 422 for an unknown locale", async () => {
    expect((await get(`/credit-notes/${notes[0]!.id}/html`, other.apiKey)).statusCode).toBe(404);
    expect((await get(`/credit-notes/${notes[0]!.id}/pdf`, other.apiKey)).statusCode).toBe(404);
    expect((await get(`/credit-notes/${notes[0]!.id}/html?locale=de`)).statusCode).toBe(422);
  });
});
