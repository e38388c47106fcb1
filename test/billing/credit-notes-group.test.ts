import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  issueCreditNote,
  listCreditNotes,
  recordPayment,
  runBilling,
  usageSource,
} from '../../libs/billing/index.js';
import { ApiError } from '../../libs/errors/index.js';
import type { CreditNote } from '../../libs/schemas/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { customerIn, outbox, productIn, subscribe } from './fixtures.js';

/*
 * Credit notes issued together (docs/decisions.md, "Concurrent credit notes share their
 * statements"), on real Postgres. Notes submitted in one turn of the event loop go in one group
 * (one transaction: they share its created_at, which the tests check so they know they test a
 * group); notes sent through the API concurrently spread over several groups in flight.
 * A Quebec invoice of one line of 3 x 10.00 = 30.00: GST 1.50, QST 2.9925 -> 2.99, total 34.49.
 * A note of 5.00: GST 0.25, QST 0.49875 -> 0.50, total 5.75; of 1.00: 0.05 + 0.09975 -> 0.10, 1.15.
 */

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  org = await createTestOrg(api.platform.db);
}, 60_000);
afterAll(() => api?.close());

const db = () => api.platform.db;

interface Invoice {
  id: string;
  status: string;
  total: string;
  balance: string;
  amount_paid: string;
  items: { id: number }[];
}

async function invoiceFor(owner = org, post = true): Promise<Invoice> {
  const product = await productIn(db(), owner.orgId, {
    name: 'Seats',
    unit_price: '10.00',
    pricing_type: 'recurring',
    currency: 'CAD',
  });
  const customerId = await customerIn(db(), owner.orgId, { state_province: 'QC' });
  const subscription = await subscribe(db(), owner.orgId, {
    customer_id: customerId,
    items: [{ product_id: product, quantity: 3 }],
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  const run = await runBilling(db(), {
    usage: usageSource(new PostgresUsageAggregator(db())),
    orgId: owner.orgId,
    subscriptionIds: [subscription.id],
    now: new Date('2026-02-01T00:00:00Z'),
    post,
  });
  expect(run.failures).toEqual([]);
  return invoice(run.invoice_ids[0]!, owner);
}

async function invoice(id: string, owner = org): Promise<Invoice> {
  const response = await api.request({ method: 'GET', path: `/invoices/${id}`, key: owner.apiKey });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data;
}

/** A note request for the lib: `amount` on the invoice's first line (or `item`). */
function request(inv: Invoice, amount: string, owner = org, item = inv.items[0]!.id) {
  return {
    orgId: owner.orgId,
    invoiceId: inv.id,
    input: { reason: 'order_change', lines: [{ invoice_item_id: item, amount }] },
  };
}

/** Every request submitted in the same turn: one group (at most 50). */
function inOneGroup(requests: ReturnType<typeof request>[]) {
  return Promise.allSettled(requests.map((r) => issueCreditNote(db(), r)));
}

const issued = (outcomes: PromiseSettledResult<CreditNote>[]) =>
  outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));

function refusal(outcome: PromiseSettledResult<CreditNote> | undefined): ApiError {
  expect(outcome?.status).toBe('rejected');
  const reason = (outcome as PromiseRejectedResult).reason;
  expect(reason).toBeInstanceOf(ApiError);
  return reason as ApiError;
}

const numbersOf = async (orgId: number) =>
  (
    await db().query<{ number: string }>(
      'SELECT number FROM credit_notes WHERE org_id = $1 ORDER BY number',
      [orgId],
    )
  ).rows.map((row) => row.number);
const cn = (n: number) => `CN-${String(n).padStart(6, '0')}`;
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => cn(from + i));

async function creditedOn(invoiceId: string) {
  const { rows } = await db().query<{ subtotal: string; applied: string; lines: string }>(
    `SELECT coalesce(sum(n.subtotal), 0)::text AS subtotal, coalesce(sum(n.applied_to_invoice), 0)::text AS applied,
            coalesce((SELECT sum(l.amount) FROM credit_note_lines l JOIN credit_notes n2 ON n2.id = l.credit_note_id
                       WHERE n2.invoice_id = $1), 0)::text AS lines
       FROM credit_notes n WHERE n.invoice_id = $1`,
    [invoiceId],
  );
  return rows[0]!;
}

describe('notes of one invoice in one group', () => {
  it('never credit it beyond its line: each sees what the ones before it credited', async () => {
    const inv = await invoiceFor();
    const outcomes = await inOneGroup(Array.from({ length: 8 }, () => request(inv, '5.00')));
    const made = issued(outcomes);
    expect(new Set(made.map((n) => n.created_at)).size).toBe(1); // one transaction
    // the first six fill the 30.00 line; the last two are refused on their line, in group order
    expect(outcomes.map((o) => o.status)).toEqual([...Array(6).fill('fulfilled'), 'rejected', 'rejected']);
    for (const outcome of outcomes.slice(6)) {
      const error = refusal(outcome);
      expect(error.code).toBe('VALIDATION_ERROR');
      expect(error.details?.map((d) => d.field)).toEqual(['lines.0.amount']);
    }
    // the tax comes back exactly (the last note takes what is left: 5.74), the balance stops at zero
    expect(made.map((n) => n.total)).toEqual([...Array(5).fill('5.75000000'), '5.74000000']);
    const credited = await creditedOn(inv.id);
    expect(credited).toMatchObject({ subtotal: '30.00000000', lines: '30.00000000', applied: '34.49000000' });
    const after = await invoice(inv.id);
    expect(after).toMatchObject({ status: 'PAID', balance: '0.00000000', amount_paid: '34.49000000' });
    const paid = (await outbox(db(), org.orgId, 'invoice.paid')).filter((e) => e.data.id === inv.id);
    expect(paid).toHaveLength(1);
  });

  it('a credit memo up to the balance, then grants: the balance and status carry from note to note', async () => {
    const inv = await invoiceFor();
    await db().transaction((tx) => recordPayment(tx, { invoiceId: inv.id, amount: '30.00' })); // balance 4.49
    const outcomes = await inOneGroup([request(inv, '1.00'), request(inv, '5.00'), request(inv, '1.00')]);
    const [a, b, c] = outcomes.map((o) => (o as PromiseFulfilledResult<CreditNote>).value);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(new Set([a!.created_at, b!.created_at, c!.created_at]).size).toBe(1);
    expect(a).toMatchObject({ total: '1.15000000', applied_to_invoice: '1.15000000', credit_grant_id: null });
    // balance 3.34 left: the memo takes it (PAID), 2.41 becomes a grant
    expect(b).toMatchObject({ applied_to_invoice: '3.34000000', credited_to_customer: '2.41000000' });
    // the invoice is PAID now: all of the third is a grant
    expect(c).toMatchObject({ applied_to_invoice: '0.00000000', credited_to_customer: '1.15000000' });
    const after = await invoice(inv.id);
    expect(after).toMatchObject({ status: 'PAID', balance: '0.00000000', amount_paid: '34.49000000' });
    const { rows: grants } = await db().query<{ id: string; name: string; amount: string }>(
      'SELECT id, name, amount::text FROM credit_grants WHERE id = ANY($1::uuid[]) ORDER BY amount DESC',
      [[b!.credit_grant_id, c!.credit_grant_id]],
    );
    expect(grants).toEqual([
      { id: b!.credit_grant_id, name: `Credit note ${b!.number}`, amount: '2.41000000' },
      { id: c!.credit_grant_id, name: `Credit note ${c!.number}`, amount: '1.15000000' },
    ]);
    const paid = (await outbox(db(), org.orgId, 'invoice.paid')).filter((e) => e.data.id === inv.id);
    expect(paid).toHaveLength(1);
  });
});

describe("an invoice that moves between the group's read and its write", () => {
  it('is worked out again: a payment committed meanwhile is neither lost nor ignored', async () => {
    const inv = await invoiceFor();
    // a payment holds the invoice's row, not committed yet
    const client = await db().pool.connect();
    try {
      await client.query('BEGIN');
      await recordPayment(client, { invoiceId: inv.id, amount: '20.00' });
      const issuing = issueCreditNote(db(), request(inv, '5.00'));
      // the group read the invoice before the payment and waits to write: the version it read is gone
      await until(async () => {
        const { rows } = await db().query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH checked AS (%'`,
        );
        return rows[0]!.n > 0;
      });
      await client.query('COMMIT');
      const made = await issuing;
      // worked out on the paid invoice: 5.75 of its 14.49 balance, after the payment's 20.00
      expect(made).toMatchObject({ applied_to_invoice: '5.75000000', credited_to_customer: '0.00000000' });
      expect(await invoice(inv.id)).toMatchObject({ status: 'PARTIALLY_PAID', amount_paid: '25.75000000' });
    } finally {
      client.release();
    }
  });
});

async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('a note refused inside a group', () => {
  it('takes no number, changes nothing and does not break its neighbours; each gets its own error', async () => {
    const other = await createTestOrg(db());
    const [one, two, draft, foreign] = [
      await invoiceFor(),
      await invoiceFor(),
      await invoiceFor(org, false),
      await invoiceFor(other),
    ];
    const before = await numbersOf(org.orgId);
    const events = (await outbox(db(), org.orgId)).length;
    const outcomes = await inOneGroup([
      request(one!, '1.00'),
      request(one!, '100.00'), // over the line: 422
      request(two!, '1.00'),
      request(draft!, '1.00'), // a DRAFT: 409
      request(foreign!, '1.00'), // another organization's invoice: 404
      { ...request(one!, '1.00'), invoiceId: 'not-a-uuid' }, // 404
      request(one!, '1.00', org, two!.items[0]!.id), // an item of another invoice: 422
      request(one!, '1.00'),
      request(two!, '0.001'), // below the cent: 422
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'fulfilled',
      'rejected',
    ]);
    expect([1, 3, 4, 5, 6, 8].map((i) => refusal(outcomes[i]).code)).toEqual([
      'VALIDATION_ERROR',
      'CONFLICT',
      'NOT_FOUND',
      'NOT_FOUND',
      'VALIDATION_ERROR',
      'VALIDATION_ERROR',
    ]);
    expect(refusal(outcomes[1]).details?.map((d) => d.field)).toEqual(['lines.0.amount']);
    expect(refusal(outcomes[6]).details?.map((d) => d.field)).toEqual(['lines.0.invoice_item_id']);
    expect(refusal(outcomes[8]).details?.map((d) => d.field)).toEqual(['lines.0.amount']);

    const made = issued(outcomes);
    expect(new Set(made.map((n) => n.created_at)).size).toBe(1);
    // the three issued numbered next, in the group's order, no number left for the refused
    const next = before.length + 1;
    expect(made.map((n) => n.number)).toEqual(range(next, next + 2));
    expect(await numbersOf(org.orgId)).toEqual(range(1, next + 2));
    const created = (await outbox(db(), org.orgId)).slice(events);
    expect(created.map((e) => [e.event_type, e.data.number])).toEqual(
      range(next, next + 2).map((number) => ['credit_note.created', number]),
    );
    expect((await creditedOn(one!.id)).lines).toBe('2.00000000');
    expect((await creditedOn(two!.id)).lines).toBe('1.00000000');
    for (const [inv, owner] of [
      [draft!, org],
      [foreign!, other],
    ] as const) {
      expect(await creditedOn(inv.id)).toMatchObject({ subtotal: '0' });
      expect((await invoice(inv.id, owner)).amount_paid).toBe(inv.amount_paid);
    }
    expect(await numbersOf(other.orgId)).toEqual([]);
  });
});

describe("another organization's note of an invoice in the owner's group", () => {
  it("is a 404 that credits nothing, while the owner's note of it is issued", async () => {
    const other = await createTestOrg(db());
    const inv = await invoiceFor();
    const before = await numbersOf(other.orgId);
    // the owner's request makes the group read the invoice: the other's must still not reach it
    const outcomes = await inOneGroup([
      request(inv, '1.00', other),
      request(inv, '2.00'),
      request(inv, '3.00', other),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'fulfilled', 'rejected']);
    expect([0, 2].map((i) => refusal(outcomes[i]).code)).toEqual(['NOT_FOUND', 'NOT_FOUND']);
    expect(await creditedOn(inv.id)).toMatchObject({ subtotal: '2.00000000', lines: '2.00000000' });
    expect(await numbersOf(other.orgId)).toEqual(before);
  });
});

describe('numbers in one group', () => {
  it("follow the group's order, whichever invoices its notes are of", async () => {
    const owner = await createTestOrg(db());
    const invoices: Invoice[] = [];
    for (let i = 0; i < 8; i++) invoices.push(await invoiceFor(owner));
    const made = issued(await inOneGroup(invoices.map((inv) => request(inv, '1.00', owner))));
    expect(new Set(made.map((n) => n.created_at)).size).toBe(1);
    expect(made.map((n) => [n.invoice_id, n.number])).toEqual(invoices.map((inv, i) => [inv.id, cn(i + 1)]));
  });
});

describe('notes of one group listed', () => {
  /*
   * A group's notes share their created_at; their numbers give their order (docs/decisions.md,
   * "Concurrent credit notes share their statements"). Eight notes of one invoice in one group:
   * every list of them (the organization's, the invoice's, the customer's) is newest first by
   * number, and pages of 1, 2 or 3 (boundaries inside the group, later pages read from the other
   * end) give each note exactly once. `from`: the counter before the group (999996: the group runs
   * from CN-999997 to CN-1000004, where the numbers' text no longer sorts like the numbers).
   */
  async function listedInNumberOrder(from: number) {
    const owner = await createTestOrg(db());
    const inv = await invoiceFor(owner);
    if (from > 0) {
      await db().query('INSERT INTO credit_note_counters (org_id, last_number) VALUES ($1, $2)', [
        owner.orgId,
        from,
      ]);
    }
    const made = issued(await inOneGroup(Array.from({ length: 8 }, () => request(inv, '1.00', owner))));
    expect(new Set(made.map((n) => n.created_at)).size).toBe(1); // one group
    const numbers = Array.from({ length: 8 }, (_, i) => `CN-${String(from + 8 - i).padStart(6, '0')}`);
    expect(made.map((n) => n.number).reverse()).toEqual(numbers);

    const customerId = made[0]!.customer_id;
    for (const filter of [{}, { invoiceId: inv.id }, { customerId }]) {
      const all = await listCreditNotes(db(), owner.orgId, filter, { limit: 100, offset: 0 });
      expect(all.data.map((n) => n.number)).toEqual(numbers);
      for (const limit of [1, 2, 3]) {
        const paged: string[] = [];
        for (let offset = 0; offset < 8; offset += limit) {
          const page = await listCreditNotes(db(), owner.orgId, filter, { limit, offset });
          expect(page.total).toBe(8);
          paged.push(...page.data.map((n) => n.number));
        }
        expect(paged, `limit ${limit}`).toEqual(numbers);
      }
    }
    // the API's list of the invoice's notes, page by page
    for (const limit of [1, 2, 3]) {
      const paged: string[] = [];
      for (let offset = 0; ; offset += limit) {
        const response = await api.request({
          method: 'GET',
          path: `/invoices/${inv.id}/credit-notes?limit=${limit}&offset=${offset}`,
          key: owner.apiKey,
        });
        expect(response.statusCode, response.body).toBe(200);
        const body = response.json();
        paged.push(...body.data.map((n: CreditNote) => n.number));
        if (!body.pagination.has_more) break;
      }
      expect(paged, `limit ${limit}`).toEqual(numbers);
    }
  }

  it('are newest first in number order, and pages give each once', () => listedInNumberOrder(0));

  it('past CN-999999 too: by the number, not its text', () => listedInNumberOrder(999_996));
});

describe('numbers under concurrency', () => {
  it('are gapless and unique per organization across invoices and groups in flight, refusals taking none', async () => {
    const first = await createTestOrg(db());
    const second = await createTestOrg(db());
    const invoices = [];
    for (let i = 0; i < 5; i++) invoices.push(await invoiceFor(first));
    const theirs = [await invoiceFor(second), await invoiceFor(second)];
    // three waves a turn apart: several groups run at once, each with both organizations and refusals
    const pending: Promise<CreditNote>[] = [];
    for (let wave = 0; wave < 3; wave++) {
      for (let i = 0; i < 12; i++) {
        pending.push(issueCreditNote(db(), request(invoices[(wave + i) % 5]!, '1.00', first)));
        if (i % 3 === 0) pending.push(issueCreditNote(db(), request(theirs[i % 2]!, '1.00', second)));
        if (i % 4 === 1) pending.push(issueCreditNote(db(), request(invoices[i % 5]!, '1000.00', first)));
      }
      await new Promise((resolve) => setImmediate(resolve));
    }
    const outcomes = await Promise.allSettled(pending);
    const made = issued(outcomes);
    expect(made).toHaveLength(36 + 12);
    expect(outcomes.filter((o) => o.status === 'rejected')).toHaveLength(9);
    expect(await numbersOf(first.orgId)).toEqual(range(1, 36));
    expect(await numbersOf(second.orgId)).toEqual(range(1, 12));
    const next = await issueCreditNote(db(), request(invoices[0]!, '1.00', first));
    expect(next.number).toBe(cn(37));
  });

  it('through the API, 40 concurrent notes over two invoices: each line credited exactly to its amount', async () => {
    const invoices = [await invoiceFor(), await invoiceFor()];
    const responses = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        api.request({
          method: 'POST',
          path: `/invoices/${invoices[i % 2]!.id}/credit-notes`,
          key: org.apiKey,
          headers: { 'content-type': 'application/json' },
          payload: JSON.stringify(request(invoices[i % 2]!, '5.00').input),
        }),
      ),
    );
    expect(responses.filter((r) => r.statusCode === 201)).toHaveLength(12);
    for (const refused of responses.filter((r) => r.statusCode !== 201)) {
      expect(refused.statusCode, refused.body).toBe(422);
      expect(refused.json().details.map((d: { field: string }) => d.field)).toEqual(['lines.0.amount']);
    }
    for (const inv of invoices) {
      expect(await creditedOn(inv.id)).toMatchObject({ lines: '30.00000000', applied: '34.49000000' });
      expect(await invoice(inv.id)).toMatchObject({ status: 'PAID', balance: '0.00000000' });
    }
    const numbers = responses.filter((r) => r.statusCode === 201).map((r) => r.json().data.number as string);
    expect(new Set(numbers).size).toBe(12);
  });
});
