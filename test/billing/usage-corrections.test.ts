import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource, withdrawInvoice } from '../../libs/billing/index.js';
import type { CreditNote } from '../../libs/schemas/index.js';
import { changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, productIn, subscribe } from './fixtures.js';

/*
 * POST /usage/events/{id}/void { correction: "credit_note" } (docs/decisions.md, "Corrections are
 * priced by the difference"): January 2026 is invoiced and posted; its events are voided with a
 * credit note for exactly what each added to its line. Quebec customer (GST 5 %, QST 9.975 %).
 */

let api: TestApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  org = await createTestOrg(api.platform.db);
}, 60_000);
afterAll(() => api?.close());

const db = () => api.platform.db;
const JAN = Date.parse('2026-01-01T00:00:00Z');
const HOUR = 3_600_000;

/** A subscription to one metered product priced by `tiers`, with `included` units. */
async function meteredPlan(
  tiers: { up_to: string | null; unit_price: string }[],
  mode: 'graduated' | 'volume',
  included = '0',
) {
  const product = await productIn(db(), org.orgId, {
    name: 'API calls',
    pricing_type: 'usage',
    pricing_mode: mode,
    currency: 'CAD',
    unit_label: 'calls',
    tiers,
  });
  const customerId = await customerIn(db(), org.orgId, { state_province: 'QC' });
  const subscription = await subscribe(db(), org.orgId, {
    customer_id: customerId,
    items: [{ product_id: product, included_units: included }],
    start_date: new Date(JAN),
  });
  return { subscription, item: subscription.items[0]!.id };
}

async function usage(item: number, quantity: number, at = JAN + 24 * HOUR): Promise<string> {
  const response = await api.request({
    method: 'POST',
    path: '/usage/events',
    key: org.apiKey,
    headers: { 'idempotency-key': randomUUID() },
    payload: { subscription_item_id: item, quantity, timestamp: new Date(at).toISOString() },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data.id;
}

/** The billing run of one subscription at `now`, which must fail nothing; `post: false` leaves drafts. */
async function billAt(subscriptionId: number, now: string, { post }: { post?: boolean } = {}) {
  const run = await runBilling(db(), {
    usage: usageSource(new PostgresUsageAggregator(db())),
    orgId: org.orgId,
    subscriptionIds: [subscriptionId],
    now: new Date(now),
    ...(post === undefined ? {} : { post }),
  });
  expect(run.failures).toEqual([]);
  return run;
}

/** January and February invoiced (the run at Mar 1): the id of the invoice of the period from `periodStart`. */
async function invoiceAfterFebruary(subscriptionId: number, periodStart: string): Promise<string> {
  await billAt(subscriptionId, '2026-03-01T00:00:00Z');
  const { rows } = await db().query<{ id: string }>(
    'SELECT id FROM invoices WHERE subscription_id = $1 AND period_start = $2',
    [subscriptionId, periodStart],
  );
  return rows[0]!.id;
}

async function billJanuary(subscriptionId: number) {
  const run = await billAt(subscriptionId, '2026-02-01T00:00:00Z');
  const invoice = await api.request({ path: `/invoices/${run.invoice_ids[0]}`, key: org.apiKey });
  return invoice.json().data as {
    id: string;
    items: { id: number; line_total_pre_tax: string }[];
    balance: string;
  };
}

const voidIt = (id: string, body?: unknown) =>
  api.request({
    method: 'POST',
    path: `/usage/events/${id}/void`,
    key: org.apiKey,
    ...(body === undefined
      ? {}
      : { headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) }),
  });

async function corrected(id: string): Promise<{ status: string; credit_note_id: string | null }> {
  const response = await voidIt(id, { correction: 'credit_note' });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data;
}

async function note(id: string): Promise<CreditNote> {
  return (await api.request({ path: `/credit-notes/${id}`, key: org.apiKey })).json().data;
}

describe('voiding an invoiced event with a correcting credit note', () => {
  it('graduated tiers above included units: each void credits exactly what its event added, one after another', async () => {
    // 1-100 at 1.00, beyond at 0.50; 10 included. 50 + 80 + 5 = 135, billable 125: 100 + 12.50 = 112.50
    const { subscription, item } = await meteredPlan(
      [
        { up_to: '100', unit_price: '1.00' },
        { up_to: null, unit_price: '0.50' },
      ],
      'graduated',
      '10',
    );
    const events = [await usage(item, 50), await usage(item, 80), await usage(item, 5)];
    const invoice = await billJanuary(subscription.id);
    expect(invoice.items[0]!.line_total_pre_tax).toBe('112.50000000');

    // a plain void of an invoiced period is still a 409
    expect((await voidIt(events[1]!)).statusCode).toBe(409);

    // without the 80: 55, billable 45: 45.00; the 80 added 67.50 (GST 3.375 -> 3.38, QST 6.733 -> 6.73)
    const first = await corrected(events[1]!);
    expect(first.status).toBe('VOIDED');
    const made = await note(first.credit_note_id!);
    expect(made).toMatchObject({
      reason: 'usage_correction',
      invoice_id: invoice.id,
      usage_event_id: events[1],
      subtotal: '67.50000000',
      tax: '10.11000000',
      total: '77.61000000',
      lines: [expect.objectContaining({ invoice_item_id: invoice.items[0]!.id, amount: '67.50000000' })],
    });
    expect(made.tax_lines.map((line) => line.amount)).toEqual(['3.38000000', '6.73000000']);

    // then the 5: 55 -> 50, billable 45 -> 40: 5.00
    const second = await corrected(events[2]!);
    expect((await note(second.credit_note_id!)).subtotal).toBe('5.00000000');

    // the voided events count nowhere, as a plain void leaves them: the daily series of their day
    // (135 - 80 - 5), and the billed period's quantity the late-usage check compares with
    const daily = await api.request({
      path: `/subscriptions/${subscription.id}/usage/daily?from=2026-01-02&to=2026-01-02`,
      key: org.apiKey,
    });
    expect(daily.statusCode, daily.body).toBe(200);
    expect(daily.json().data.map((day: { quantity: string }) => day.quantity)).toEqual(['50.00000000']);
    const { rows: billed } = await db().query<{ period_quantity: string }>(
      'SELECT period_quantity::text AS period_quantity FROM usage_billed_periods WHERE subscription_item_id = $1',
      [item],
    );
    expect(billed.map((row) => Number(row.period_quantity))).toEqual([50]);

    // again: the same event, the same note, nothing new
    expect((await corrected(events[1]!)).credit_note_id).toBe(first.credit_note_id);
    const list = (
      await api.request({ path: `/invoices/${invoice.id}/credit-notes`, key: org.apiKey })
    ).json();
    expect(list.data).toHaveLength(2);
  });

  it('included units: only the part above them is credited; an event within them credits nothing', async () => {
    // 1.00 a call, 10 included: 8 + 5 = 13, billable 3: 3.00; without the 8: 5, billable 0
    const { subscription, item } = await meteredPlan(
      [{ up_to: null, unit_price: '1.00' }],
      'graduated',
      '10',
    );
    const big = await usage(item, 8);
    const small = await usage(item, 5);
    await billJanuary(subscription.id);
    const first = await corrected(big);
    expect((await note(first.credit_note_id!)).subtotal).toBe('3.00000000');
    // 5 left, all within the included units: the line is 0 now, and so it stays
    const second = await corrected(small);
    expect(second).toMatchObject({ status: 'VOIDED', credit_note_id: null });
  });

  it('volume tiers: a void that would raise the line is refused and the event stays counted', async () => {
    // volume: up to 100 at 1.00, beyond at 0.50 for all units. 70 + 50 = 120: 60.00; without the 50: 70.00
    const { subscription, item } = await meteredPlan(
      [
        { up_to: '100', unit_price: '1.00' },
        { up_to: null, unit_price: '0.50' },
      ],
      'volume',
    );
    await usage(item, 70);
    const fifty = await usage(item, 50);
    await billJanuary(subscription.id);
    const refused = await voidIt(fifty, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    const event = (await api.request({ path: `/usage/events/${fifty}`, key: org.apiKey })).json().data;
    expect(event.status).toBe('ACTIVE');
  });

  it("an event at the running period's first instant is not the invoiced period's: a 409", async () => {
    // docs/decisions.md, "Periods, prices and tax": a period is [start, end); Feb 1 00:00 is February's
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const FEB = Date.parse('2026-02-01T00:00:00Z');
    const last = await usage(item, 2, FEB - 1);
    const first = await usage(item, 3, FEB);
    await billJanuary(subscription.id);
    const refused = await voidIt(first, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toContain('belongs to a period not invoiced yet');
    expect((await api.request({ path: `/usage/events/${first}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
    // January's last millisecond is January's: its invoice (period_end, the last day, inclusive)
    // holds it, so a plain void is a 409 and a correction credits it on that invoice
    const plain = await voidIt(last);
    expect(plain.statusCode, plain.body).toBe(409);
    expect((await api.request({ path: `/usage/events/${last}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
    expect((await corrected(last)).credit_note_id).not.toBeNull();
  });

  it("an event at an invoiced period's first instant is corrected on that period's invoice", async () => {
    // January and February invoiced; Feb 1 00:00 is February's, not January's
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const FEB = Date.parse('2026-02-01T00:00:00Z');
    await usage(item, 2, FEB - 1);
    const first = await usage(item, 3, FEB);
    const invoiceId = await invoiceAfterFebruary(subscription.id, '2026-02-01');
    const made = await note((await corrected(first)).credit_note_id!);
    expect(made).toMatchObject({ invoice_id: invoiceId, subtotal: '3.00000000' });
  });

  it("an event two periods back is corrected on its own period's invoice, not the last one", async () => {
    // January (5 calls) and February (7 calls) invoiced; March is running
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const january = await usage(item, 5, JAN + 24 * HOUR);
    await usage(item, 7, Date.parse('2026-02-02T00:00:00Z'));
    const invoiceId = await invoiceAfterFebruary(subscription.id, '2026-01-01');
    const made = await note((await corrected(january)).credit_note_id!);
    expect(made).toMatchObject({ invoice_id: invoiceId, subtotal: '5.00000000' });
  });

  it("an event of a period whose invoice also carries the previous period's late usage is credited on that period's usage line", async () => {
    // January billed 5 calls on its own invoice; 3 more January calls arrive late and go on
    // February's invoice after February's own line (7 + 4 = 11.00): voiding the 7 credits 7.00 on
    // February's usage line of its item, not on the late line nor on January's invoice
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    await usage(item, 5);
    const january = await billJanuary(subscription.id);
    await usage(item, 3, JAN + 48 * HOUR);
    const seven = await usage(item, 7, Date.parse('2026-02-02T00:00:00Z'));
    await usage(item, 4, Date.parse('2026-02-03T00:00:00Z'));
    const run = await billAt(subscription.id, '2026-03-01T00:00:00Z');
    const february = (await api.request({ path: `/invoices/${run.invoice_ids[0]}`, key: org.apiKey })).json()
      .data as { id: string; items: { id: number; line_total_pre_tax: string }[] };
    expect(february.id).not.toBe(january.id);
    expect(february.items.map((line) => line.line_total_pre_tax)).toEqual(['11.00000000', '3.00000000']);
    const made = await note((await corrected(seven)).credit_note_id!);
    expect(made).toMatchObject({ invoice_id: february.id, subtotal: '7.00000000' });
    expect(made.lines).toEqual([
      expect.objectContaining({ invoice_item_id: february.items[0]!.id, amount: '7.00000000' }),
    ]);
  });

  it("an event is corrected on its own period's posted invoice, whatever invoices were made after it", async () => {
    // made in this order: January's DRAFT (withdrawn), February's invoice, January billed again
    // (migration 019: a period whose only invoice was withdrawn unposted is billed again), March's
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    await usage(item, 2);
    const four = await usage(item, 4, JAN + 48 * HOUR);
    const five = await usage(item, 5, Date.parse('2026-02-02T00:00:00Z'));
    const draft = await billAt(subscription.id, '2026-02-01T00:00:00Z', { post: false });
    const february = await billAt(subscription.id, '2026-03-01T00:00:00Z');
    await db().transaction((tx) =>
      withdrawInvoice(tx, { invoiceId: draft.invoice_ids[0]!, orgId: org.orgId }),
    );
    const january = await billAt(subscription.id, '2026-03-02T00:00:00Z');
    await billAt(subscription.id, '2026-04-01T00:00:00Z');
    const { rows } = await db().query<{ id: string; period_start: string; status: string }>(
      `SELECT id, period_start::text AS period_start, status FROM invoices
        WHERE subscription_id = $1 ORDER BY invoice_number`,
      [subscription.id],
    );
    expect(rows.map((row) => [row.period_start, row.status])).toEqual([
      ['2026-01-01', 'WITHDRAWN'],
      ['2026-02-01', 'POSTED'],
      ['2026-01-01', 'POSTED'],
      // nothing used in March: 0.00, paid as it is posted
      ['2026-03-01', 'PAID'],
    ]);
    // February's 5 on February's invoice, not on January's made after it
    const onFebruary = await note((await corrected(five)).credit_note_id!);
    expect(onFebruary).toMatchObject({ invoice_id: february.invoice_ids[0], subtotal: '5.00000000' });
    // January's 4 on the invoice that billed January again, not on the withdrawn draft nor March's
    const onJanuary = await note((await corrected(four)).credit_note_id!);
    expect(onJanuary).toMatchObject({ invoice_id: january.invoice_ids[0], subtotal: '4.00000000' });
  });

  it('late usage of the invoiced period makes its line no longer match: a 409, nothing voided', async () => {
    // January's line billed 5 calls (5.00); 3 more January calls arrive after it was invoiced, so
    // the period counts 8 while its line says 5: what the 5 added cannot be told from the line
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const five = await usage(item, 5);
    const invoice = await billJanuary(subscription.id);
    expect(invoice.items[0]!.line_total_pre_tax).toBe('5.00000000');
    await usage(item, 3, JAN + 48 * HOUR);
    const refused = await voidIt(five, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toContain("no longer matches the period's usage");
    expect((await api.request({ path: `/usage/events/${five}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
    const notes = await api.request({ path: `/invoices/${invoice.id}/credit-notes`, key: org.apiKey });
    expect(notes.json().data).toEqual([]);
  });

  it('a note issued by hand on the line does not hold a correction back: only corrections count', async () => {
    // 1.00 a call: 4 + 6 = 10.00; 1.00 credited by hand, then the 6 voided: 6.00 more
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    await usage(item, 4);
    const six = await usage(item, 6);
    const invoice = await billJanuary(subscription.id);
    const byHand = await api.request({
      method: 'POST',
      path: `/invoices/${invoice.id}/credit-notes`,
      key: org.apiKey,
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({
        reason: 'other',
        lines: [{ invoice_item_id: invoice.items[0]!.id, amount: '1.00' }],
      }),
    });
    expect(byHand.statusCode, byHand.body).toBe(201);
    expect((await note((await corrected(six)).credit_note_id!)).subtotal).toBe('6.00000000');
  });

  it("a period with a change's proration lines: the note credits only what the event added to its line", async () => {
    // Seats 2 x 10.00 and API calls (1-100 at 1.00, beyond at 0.50), raised to 5 seats on Jan 11
    // with proration: January's invoice carries a credit and a charge besides the two items' lines
    const { seats, apiCalls } = await basicCatalog(db(), org.orgId);
    const customerId = await customerIn(db(), org.orgId, { state_province: 'QC' });
    const subscription = await subscribe(db(), org.orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity: 2 }, { product_id: apiCalls }],
      start_date: new Date(JAN),
    });
    const [seat, calls] = subscription.items;
    // the domain function: the API's change is at the clock's now, long after January
    const changed = await changeSubscription(db(), {
      subscriptionId: subscription.id,
      orgId: org.orgId,
      change: { items: [{ id: seat!.id, quantity: 5 }, { id: calls!.id }] },
      now: new Date('2026-01-11T00:00:00Z'),
    });
    // Jan 11 -> Feb 1: 21 of 31 days; credit 20.00 x 21/31 = 13.548 -> 13.55, charge 50.00 x 21/31 = 33.871 -> 33.87
    expect(changed.proration_lines.map((line) => line.amount)).toEqual(['-13.55000000', '33.87000000']);
    await usage(calls!.id, 50);
    const eighty = await usage(calls!.id, 80);
    const invoice = await billJanuary(subscription.id);
    // 130 calls: 100 x 1.00 + 30 x 0.50 = 115.00
    expect(invoice.items.map((line) => line.line_total_pre_tax)).toEqual([
      '20.00000000',
      '115.00000000',
      '-13.55000000',
      '33.87000000',
    ]);

    // the note is the metered line's difference alone, whatever else the invoice carries
    // without the 80: 50 calls, 50.00; the 80 added 65.00 (GST 3.25, QST 6.48375 -> 6.48)
    const made = await note((await corrected(eighty)).credit_note_id!);
    expect(made).toMatchObject({
      reason: 'usage_correction',
      invoice_id: invoice.id,
      subtotal: '65.00000000',
      tax: '9.73000000',
    });
    expect(made.lines).toHaveLength(1);
    expect(made.lines[0]).toMatchObject({ invoice_item_id: invoice.items[1]!.id, amount: '65.00000000' });
  });

  it('a correction of a period whose invoice is still a DRAFT is a 409 naming it; nothing is voided', async () => {
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const event = await usage(item, 3);
    await billAt(subscription.id, '2026-02-01T00:00:00Z', { post: false });
    const refused = await voidIt(event, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toContain(
      'which is DRAFT: only a posted invoice takes a correcting credit note',
    );
    expect((await api.request({ path: `/usage/events/${event}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
  });

  it('a plain void of an event of a period on a DRAFT invoice re-rates the draft at once', async () => {
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const kept = await usage(item, 3);
    const dropped = await usage(item, 4);
    const run = await billAt(subscription.id, '2026-02-01T00:00:00Z', { post: false });
    const draftTotal = async () => {
      const read = await api.request({ path: `/invoices/${run.invoice_ids[0]}`, key: org.apiKey });
      const invoice = read.json().data as { status: string; items: { line_total_pre_tax: string }[] };
      expect(invoice.status).toBe('DRAFT');
      return invoice.items.map((line) => line.line_total_pre_tax);
    };
    expect(await draftTotal()).toEqual(['7.00000000']);
    const voided = await voidIt(dropped);
    expect(voided.statusCode, voided.body).toBe(200);
    expect(await draftTotal()).toEqual(['3.00000000']);
    expect((await api.request({ path: `/usage/events/${kept}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
  });

  it('a correction of a period whose invoice was withdrawn is a 409 naming it; nothing is voided', async () => {
    const { subscription, item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const event = await usage(item, 3);
    const run = await billAt(subscription.id, '2026-02-01T00:00:00Z');
    await db().query(`UPDATE invoices SET status = 'WITHDRAWN' WHERE id = $1`, [run.invoice_ids[0]]);
    const refused = await voidIt(event, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toContain(
      'which is WITHDRAWN: only a posted invoice takes a correcting credit note',
    );
    expect((await api.request({ path: `/usage/events/${event}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
  });

  it("a correction of a trial's usage is a 409 once later periods are invoiced: no invoice charged it", async () => {
    const product = await productIn(db(), org.orgId, {
      name: 'API calls',
      pricing_type: 'usage',
      pricing_mode: 'graduated',
      currency: 'CAD',
      unit_label: 'calls',
      tiers: [{ up_to: null, unit_price: '1.00' }],
    });
    const customerId = await customerIn(db(), org.orgId, { state_province: 'QC' });
    const subscription = await subscribe(db(), org.orgId, {
      customer_id: customerId,
      items: [{ product_id: product }],
      trial_days: 14,
      start_date: new Date(JAN),
    });
    const inTrial = await usage(subscription.items[0]!.id, 3, JAN + 24 * HOUR);
    // the trial ends on Jan 15; the first paid period (Jan 15 - Feb 15) is invoiced and posted
    await billAt(subscription.id, '2026-02-15T00:00:00Z');
    const refused = await voidIt(inTrial, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json().detail).toBe(
      `Usage event ${inTrial} belongs to a period not invoiced yet: void it without a correction.`,
    );
    expect(
      (await api.request({ path: `/usage/events/${inTrial}`, key: org.apiKey })).json().data.status,
    ).toBe('ACTIVE');
  });

  it('a correction of a period not invoiced yet is a 409; a bad correction is a 422', async () => {
    const { item } = await meteredPlan([{ up_to: null, unit_price: '1.00' }], 'graduated');
    const open = await usage(item, 3, Date.now() - HOUR);
    const refused = await voidIt(open, { correction: 'credit_note' });
    expect(refused.statusCode, refused.body).toBe(409);
    expect((await api.request({ path: `/usage/events/${open}`, key: org.apiKey })).json().data.status).toBe(
      'ACTIVE',
    );
    const bad = await voidIt(open, { correction: 'refund' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().details.map((d: { field: string }) => d.field)).toEqual(['correction']);
    // a plain void, with or without an empty body, still works
    expect((await voidIt(open, {})).statusCode).toBe(200);
  });
});
