import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createCreditNote,
  getCreditNote,
  issueCreditNote,
  recordPayment,
  runBilling,
  usageSource,
  voidUsageWithCreditNote,
} from '../../libs/billing/index.js';
import { Database, migrate, startEmbeddedPostgres } from '../../libs/db/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import { createOrganization } from '../../libs/organizations/index.js';
import type { CreditNote, InvoiceRecord } from '../../libs/schemas/index.js';
import { PostgresUsageAggregator, PostgresUsageSink } from '../../libs/usage/index.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { freePort } from '../helpers/processes.js';
import { readStoresOver } from '../helpers/read-stores.js';

/**
 * Credit notes on the embedded database (PGlite behind its socket, the in-process usage log):
 * the same functions as the routes, the same invariants as on Postgres.
 */
describe('credit notes on embedded PGlite', { timeout: 180_000 }, () => {
  let dataDir: string;
  let server: Awaited<ReturnType<typeof startEmbeddedPostgres>>;
  let db: Database;
  let orgId: number;
  let apiCalls: number;
  let seats: number;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'billing-pglite-notes-'));
    server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port: freePort() });
    db = new Database(server.url, { poolSize: 3 });
    await migrate(db);
    orgId = (await createOrganization(db, { name: 'Embedded Notes Co' })).id;
    ({ seats, apiCalls } = await basicCatalog(db, orgId));
  }, 120_000);
  afterAll(async () => {
    await db?.close();
    await server?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  /** A Quebec customer's posted January invoice: `quantity` seats (10.00) and metered API calls. */
  async function januaryInvoice(quantity: number, usage: number[] = []) {
    const customerId = await customerIn(db, orgId, { state_province: 'QC' });
    const subscription = await subscribe(db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity }, { product_id: apiCalls }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    const metered = subscription.items.find((item) => item.usage_type === 'metered')!.id;
    const eventIds: string[] = [];
    for (const quantityUsed of usage) {
      const id = randomUUID();
      eventIds.push(id);
      await new PostgresUsageSink(db).write([
        {
          id,
          orgId,
          subscriptionItemId: metered,
          idempotencyKey: id,
          quantity: String(quantityUsed),
          occurredAtMs: Date.parse('2026-01-10T00:00:00Z'),
          recordedAtMs: Date.now(),
        },
      ]);
    }
    const run = await runBilling(db, {
      usage: usageSource(new PostgresUsageAggregator(db)),
      orgId,
      subscriptionIds: [subscription.id],
      now: new Date('2026-02-01T00:00:00Z'),
    });
    expect(run.failures).toEqual([]);
    return { invoice: await getInvoice(db, orgId, run.invoice_ids[0]!), eventIds };
  }

  const credit = (invoice: InvoiceRecord, amount: string, line = 0): Promise<CreditNote> =>
    db.transaction((tx) =>
      createCreditNote(tx, {
        orgId,
        invoiceId: invoice.id,
        input: { reason: 'other', lines: [{ invoice_item_id: invoice.items[line]!.id, amount }] },
      }),
    );

  it('numbers concurrent notes without gaps, tax per component, memo then grant once paid', async () => {
    const { invoice } = await januaryInvoice(10);
    const made = await Promise.all(Array.from({ length: 8 }, () => credit(invoice, '1.00')));
    expect(made.map((note) => note.number).sort()).toEqual(
      Array.from({ length: 8 }, (_, i) => `CN-${String(i + 1).padStart(6, '0')}`),
    );
    // 1.00: GST 0.05, QST 0.09975 -> 0.10
    expect(made[0]!.tax_lines.map((line) => line.amount)).toEqual(['0.05000000', '0.10000000']);
    expect(made.every((note) => note.applied_to_invoice === '1.15000000')).toBe(true);
    const paid = await getInvoice(db, orgId, invoice.id);
    await db.transaction((tx) => recordPayment(tx, { invoiceId: invoice.id, amount: paid.balance }));
    const granted = await credit(invoice, '2.00');
    expect(granted).toMatchObject({ applied_to_invoice: '0.00000000', credited_to_customer: '2.30000000' });
    expect((await getCreditNote(db, orgId, granted.id)).credit_grant_id).toBe(granted.credit_grant_id);
  });

  it('two concurrent notes over-crediting one line: one is issued, one refused', async () => {
    const { invoice } = await januaryInvoice(3); // the seats line: 30.00
    const results = await Promise.allSettled([credit(invoice, '20.00'), credit(invoice, '20.00')]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toBeInstanceOf(ApiError);
    expect((refused.reason as ApiError).details?.map((d) => d.field)).toEqual(['lines.0.amount']);
  });

  it("the routes' grouped path: concurrent notes over two invoices, gapless, never past a line", async () => {
    // issueCreditNote on a Database gathers concurrent requests into groups (one statement each)
    const first = await januaryInvoice(3); // seats 30.00
    const second = await januaryInvoice(2); // seats 20.00
    const issue = (invoice: InvoiceRecord, amount: string) =>
      issueCreditNote(db, {
        orgId,
        invoiceId: invoice.id,
        input: { reason: 'other', lines: [{ invoice_item_id: invoice.items[0]!.id, amount }] },
      });
    const { rows: before } = await db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM credit_notes WHERE org_id = $1',
      [orgId],
    );
    const results = await Promise.allSettled([
      ...Array.from({ length: 8 }, () => issue(first.invoice, '5.00')), // 6 fit in 30.00
      ...Array.from({ length: 5 }, () => issue(second.invoice, '5.00')), // 4 fit in 20.00
    ]);
    const issued = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(issued.filter((note) => note.invoice_id === first.invoice.id)).toHaveLength(6);
    expect(issued.filter((note) => note.invoice_id === second.invoice.id)).toHaveLength(4);
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as ApiError] : []));
    expect(refused.map((error) => error.details?.[0]?.field)).toEqual([
      'lines.0.amount',
      'lines.0.amount',
      'lines.0.amount',
    ]);
    // numbers continue the organization's sequence with no gap and no repeat (refusals take none)
    const start = before[0]!.n;
    expect(issued.map((note) => note.number).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `CN-${String(start + i + 1).padStart(6, '0')}`),
    );
    for (const { invoice } of [first, second]) {
      const after = await getInvoice(db, orgId, invoice.id);
      expect(after.balance).toBe('0.00000000');
    }
  });

  it('voids an invoiced event with a correcting note (graduated tiers)', async () => {
    // 1-100 at 1.00, beyond at 0.50: 90 + 40 = 130: 100 + 15 = 115.00; without the 40: 90.00
    const { invoice, eventIds } = await januaryInvoice(1, [90, 40]);
    const stores = readStoresOver(db);
    const voided = await voidUsageWithCreditNote(db, stores, orgId, eventIds[1]!);
    expect(voided.status).toBe('VOIDED');
    const note = await getCreditNote(db, orgId, voided.credit_note_id!);
    expect(note).toMatchObject({
      reason: 'usage_correction',
      subtotal: '25.00000000',
      invoice_id: invoice.id,
    });
  });
});
