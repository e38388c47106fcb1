import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { displayAmount } from '../../libs/i18n/index.js';
import { listInvoices, RenderedInvoicePages } from '../../libs/invoices/index.js';
import { Invoice, jsonWriter, listOf } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import {
  type BillingScenario,
  insertBillingScenario,
  insertInvoice,
  insertSubscription,
} from '../helpers/billing-fixtures.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/**
 * GET /invoices writes each invoice's JSON once per version and keeps it (RenderedInvoicePages):
 * the text must be what the schema writes for what listInvoices reads, and a change to an
 * invoice or its items must show on the next page.
 */
let api: TestApi;
let org: TestOrg;
let scenario: BillingScenario;
const page = { limit: 100, offset: 0 };

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  scenario = await insertBillingScenario(api.platform.db, org.orgId);
});
afterAll(() => api?.close());

async function listed(query = 'limit=100') {
  const response = await api.request({ path: `/invoices?${query}`, key: org.apiKey });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
  return { body: response.body, data: (response.json() as { data: Invoice[] }).data };
}

const BASE = 'https://billing.example';
const withoutLink = ({ hosted_url: _, ...record }: Invoice) => record;

describe('invoice pages from kept renderings', () => {
  it('writes byte for byte what the schema writes for what listInvoices reads', async () => {
    for (let pass = 0; pass < 2; pass++) {
      // the first pass renders every invoice, the second is served from what was kept
      const { body, data } = await listed();
      expect(data).toHaveLength(Object.keys(scenario.invoices).length);
      expect(body).toBe(jsonWriter(listOf(Invoice))(JSON.parse(body)));
      const read = await listInvoices(api.platform.db, org.orgId, {}, page);
      expect(data.map(withoutLink)).toEqual(read.data);
      for (const invoice of data)
        expect(invoice.hosted_url).toMatch(/^http:\/\/localhost(:80)?\/portal\/invoice\/hinv_/);
      expect(JSON.parse(body).pagination).toEqual({
        limit: 100,
        offset: 0,
        total: read.total,
        has_more: false,
      });
    }
  });

  it('serves a kept rendering while the version stands, and the new data once it moves', async () => {
    const { db } = api.platform;
    const pages = new RenderedInvoicePages(db, 1024 * 1024);
    const target = scenario.invoices.POSTED.id;
    const due = async () =>
      (await pages.list(org.orgId, {}, page, BASE)).items
        .map((json) => JSON.parse(json.toString()) as Invoice)
        .find((invoice) => invoice.id === target)!.due_date;
    const before = await due();
    // Proof the page is served from memory: change the row with the version trigger off...
    await db.query('ALTER TABLE invoices DISABLE TRIGGER invoices_version');
    try {
      await db.query(`UPDATE invoices SET due_date = '2031-01-31' WHERE id = $1`, [target]);
      expect(await due()).toBe(before);
    } finally {
      await db.query('ALTER TABLE invoices ENABLE TRIGGER invoices_version');
    }
    // ...and that any change with it on moves the version, whatever wrote it.
    await db.query(`UPDATE invoices SET due_date = '2031-02-28' WHERE id = $1`, [target]);
    expect(await due()).toBe('2031-02-28');
  });

  it('shows a change to an invoice item on the next page', async () => {
    const target = scenario.invoices.PAID.id;
    const before = (await listed()).data.map((invoice) => invoice.id); // kept
    await api.platform.db.query(
      `UPDATE invoice_items SET description = 'Renamed line' WHERE invoice_id = $1`,
      [target],
    );
    const { data } = await listed();
    const invoice = data.find((i) => i.id === target)!;
    expect(invoice.items.map((item) => item.description)).toContain('Renamed line');
    // the page mixes kept renderings and the one written again: every invoice is on it, in order
    expect(data.map((i) => i.id)).toEqual(before);
  });

  it('counts exactly the bytes it holds, a replaced rendering no longer, and may hold its bound exactly', async () => {
    const { db } = api.platform;
    const pages = new RenderedInvoicePages(db, 10 * 1024 * 1024);
    const heldBytes = (items: Buffer[]) => items.reduce((sum, json) => sum + json.length + 100, 0);
    const first = await pages.list(org.orgId, {}, page, BASE);
    expect(pages.stats).toEqual({ invoices: first.items.length, bytes: heldBytes(first.items) });
    await db.query(`UPDATE invoices SET due_date = due_date + 1 WHERE id = $1`, [
      scenario.invoices.POSTED.id,
    ]);
    const second = await pages.list(org.orgId, {}, page, BASE);
    expect(pages.stats).toEqual({ invoices: second.items.length, bytes: heldBytes(second.items) });

    const exact = new RenderedInvoicePages(db, heldBytes(second.items));
    await exact.list(org.orgId, {}, page, BASE);
    expect(exact.stats).toEqual(pages.stats);
  });

  it('keeps no more than its memory bound; a rendering read lately gets a second chance', async () => {
    const { db } = api.platform;
    const probe = new RenderedInvoicePages(db, 10 * 1024 * 1024);
    await probe.list(org.orgId, {}, page, BASE);
    const perInvoice = probe.stats.bytes / probe.stats.invoices;
    const bound = Math.floor(perInvoice * 2.5);
    const small = new RenderedInvoicePages(db, bound);
    const { items } = await small.list(org.orgId, {}, page, BASE);
    expect(items).toHaveLength(probe.stats.invoices); // the page is whole all the same
    expect(small.stats.invoices).toBe(2);
    expect(small.stats.bytes).toBeLessThanOrEqual(bound);

    // one invoice per page: hold the first two, read the first again, then bring in a third
    const clock = new RenderedInvoicePages(db, bound);
    const idAt = async (offset: number) => {
      const [json] = (await clock.list(org.orgId, {}, { limit: 1, offset }, BASE)).items;
      return (JSON.parse(json!.toString()) as Invoice).id;
    };
    const first = await idAt(0);
    const second = await idAt(1);
    expect(await idAt(0)).toBe(first);
    const third = await idAt(2);
    expect([first, second, third].map((id) => clock.holds(id))).toEqual([true, false, true]);

    // the second chance is given once: both held ones read again, a newcomer goes; the next
    // newcomer finds them passed over and takes the place of the oldest
    const again = new RenderedInvoicePages(db, bound);
    const at = async (offset: number) => {
      const [json] = (await again.list(org.orgId, {}, { limit: 1, offset }, BASE)).items;
      return (JSON.parse(json!.toString()) as Invoice).id;
    };
    const ids = [await at(0), await at(1)];
    await at(0);
    await at(1);
    ids.push(await at(2));
    expect(ids.map((id) => again.holds(id))).toEqual([true, true, false]);
    ids.push(await at(3));
    expect(ids.map((id) => again.holds(id))).toEqual([false, true, false, true]);
  });

  it('filters, pages and counts as listInvoices does', async () => {
    for (const query of [
      'status=POSTED',
      'limit=2&offset=1',
      `customer_id=${scenario.customers.quebec.id}`,
    ]) {
      const { body } = await listed(query);
      const params = new URLSearchParams(query);
      const read = await listInvoices(
        api.platform.db,
        org.orgId,
        {
          status: (params.get('status') ?? undefined) as Invoice['status'] | undefined,
          customerId: params.has('customer_id') ? Number(params.get('customer_id')) : undefined,
        },
        { limit: Number(params.get('limit') ?? 25), offset: Number(params.get('offset') ?? 0) },
      );
      expect(JSON.parse(body).data.map(withoutLink), query).toEqual(read.data);
      expect(JSON.parse(body).pagination.total, query).toBe(read.total);
    }
  });

  it('keeps a rendering per base URL: a link is never served under another host', async () => {
    const pages = new RenderedInvoicePages(api.platform.db, 1024 * 1024);
    const links = async (base: string) =>
      (await pages.list(org.orgId, {}, page, base)).items.map(
        (json) => (JSON.parse(json.toString()) as Invoice).hosted_url,
      );
    const first = await links(BASE);
    const other = await links('https://other.example');
    expect(first.length).toBeGreaterThan(0);
    for (const url of first) expect(url.startsWith(`${BASE}/portal/invoice/hinv_`)).toBe(true);
    expect(other).toEqual(first.map((url) => url.replace(BASE, 'https://other.example')));
  });

  it('keeps the rendering of the host last read at the same version, and counts only its bytes', async () => {
    const pages = new RenderedInvoicePages(api.platform.db, 1024 * 1024);
    const heldBytes = (items: Buffer[]) => items.reduce((sum, json) => sum + json.length + 100, 0);
    const first = await pages.list(org.orgId, {}, page, BASE);
    const other = await pages.list(org.orgId, {}, page, 'https://other.example');
    expect(heldBytes(other.items)).not.toBe(heldBytes(first.items));
    expect(pages.stats).toEqual({ invoices: other.items.length, bytes: heldBytes(other.items) });
  });
});

/** The PDF's text as pdftotext (poppler) reads it, laid out as printed. */
function pdfText(pdf: Buffer): string {
  return execFileSync('pdftotext', ['-layout', '-', '-'], { input: pdf }).toString('utf8');
}

describe('printable invoice (HTML and PDF)', () => {
  async function documents(invoiceId: string) {
    const html = await api.request({ path: `/invoices/${invoiceId}/html`, key: org.apiKey });
    const pdf = await api.request({ path: `/invoices/${invoiceId}/pdf`, key: org.apiKey });
    expect(html.statusCode).toBe(200);
    expect(pdf.statusCode).toBe(200);
    return { html: html.body, pdf: pdfText(pdf.rawPayload) };
  }

  it('splits Quebec tax into GST and QST, summing exactly to the invoice tax', async () => {
    // 249.95 x 5 % = 12.4975 GST; 15.431875 x 5 % = 0.77159375 GST; QST is the rest of each line's tax
    const { html, pdf } = await documents(scenario.invoices.POSTED.id);
    expect(html).toMatch(/<td>GST<\/td><td class="num">13\.26909375 CAD<\/td>/);
    expect(html).toMatch(/<td>QST<\/td><td class="num">26\.47184203 CAD<\/td>/);
    expect(html).toMatch(/<td>Total tax<\/td><td class="num">39\.74093578 CAD<\/td>/);
    expect(pdf).toMatch(/GST\s+13\.26909375 CAD/);
    expect(pdf).toMatch(/QST\s+26\.47184203 CAD/);
    expect(pdf).toMatch(/Total tax\s+39\.74093578 CAD/);
  });

  it('prints large item figures whole in the PDF, never wrapped mid-number', async () => {
    const { db } = api.platform;
    const subscription = await insertSubscription(db, org.orgId, {
      customerId: scenario.customers.quebec.id,
    });
    const invoice = await insertInvoice(db, org.orgId, {
      customerId: scenario.customers.quebec.id,
      subscriptionId: subscription.id,
      items: [
        {
          productId: scenario.products.apiCalls,
          description: 'API calls',
          quantity: '1234567.8901',
          unitPrice: '12.34567891',
          taxRate: '0.14975',
          taxType: 'GST_QST',
        },
      ],
    });
    const json = (
      (await api.request({ path: `/invoices/${invoice.id}`, key: org.apiKey })).json() as { data: Invoice }
    ).data;
    const [item] = json.items;
    const { pdf } = await documents(invoice.id);
    const row = pdf.split('\n').find((line) => line.includes('API calls'))!;
    expect(row).toContain('1,234,567.8901');
    expect(row).toContain('12.34567891');
    // 16 digits and more, in columns sized for about 12
    for (const amount of [item!.line_total_pre_tax, item!.tax_amount]) {
      expect(amount.replace('.', '').length).toBeGreaterThanOrEqual(15);
      expect(row).toContain(displayAmount(amount, 'en'));
    }
  });
});
