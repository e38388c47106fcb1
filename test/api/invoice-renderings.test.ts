import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listInvoices, RenderedInvoicePages } from '../../libs/invoices/index.js';
import { Invoice, jsonWriter, listOf } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { type BillingScenario, insertBillingScenario } from '../helpers/billing-fixtures.js';
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

describe('invoice pages from kept renderings', () => {
  it('writes byte for byte what the schema writes for what listInvoices reads', async () => {
    for (let pass = 0; pass < 2; pass++) {
      // the first pass renders every invoice, the second is served from what was kept
      const { body, data } = await listed();
      expect(data).toHaveLength(Object.keys(scenario.invoices).length);
      expect(body).toBe(jsonWriter(listOf(Invoice))(JSON.parse(body)));
      const read = await listInvoices(api.platform.db, org.orgId, {}, page);
      expect(data).toEqual(read.data);
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
      (await pages.list(org.orgId, {}, page)).items
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
    await listed(); // kept
    await api.platform.db.query(
      `UPDATE invoice_items SET description = 'Renamed line' WHERE invoice_id = $1`,
      [target],
    );
    const { data } = await listed();
    const invoice = data.find((i) => i.id === target)!;
    expect(invoice.items.map((item) => item.description)).toContain('Renamed line');
  });

  it('keeps no more than its memory bound; a rendering read lately gets a second chance', async () => {
    const { db } = api.platform;
    const probe = new RenderedInvoicePages(db, 10 * 1024 * 1024);
    await probe.list(org.orgId, {}, page);
    const perInvoice = probe.stats.bytes / probe.stats.invoices;
    const bound = Math.floor(perInvoice * 2.5);
    const small = new RenderedInvoicePages(db, bound);
    const { items } = await small.list(org.orgId, {}, page);
    expect(items).toHaveLength(probe.stats.invoices); // the page is whole all the same
    expect(small.stats.invoices).toBe(2);
    expect(small.stats.bytes).toBeLessThanOrEqual(bound);

    // one invoice per page: hold the first two, read the first again, then bring in a third
    const clock = new RenderedInvoicePages(db, bound);
    const idAt = async (offset: number) => {
      const [json] = (await clock.list(org.orgId, {}, { limit: 1, offset })).items;
      return (JSON.parse(json!.toString()) as Invoice).id;
    };
    const first = await idAt(0);
    const second = await idAt(1);
    expect(await idAt(0)).toBe(first);
    const third = await idAt(2);
    expect([first, second, third].map((id) => clock.holds(id))).toEqual([true, false, true]);
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
      expect(JSON.parse(body).data, query).toEqual(read.data);
      expect(JSON.parse(body).pagination.total, query).toBe(read.total);
    }
  });
});
