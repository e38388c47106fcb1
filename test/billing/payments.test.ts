import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addCustomerCredit,
  createCreditMemo,
  createRefund,
  type MoneyInput,
  postInvoice,
  recordPayment,
  runBilling,
  usageSource,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { getCustomer } from '../../libs/customers/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { getInvoice, listInvoiceTransactions } from '../../libs/invoices/index.js';
import { changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, outbox, subscribe } from './fixtures.js';

let database: TestDatabase;
let orgId: number;
let customerId: number;
let seats: number;

beforeAll(async () => {
  database = await createTestDatabase('payments');
  ({ orgId } = await createTestOrg(database.db));
  ({ seats } = await basicCatalog(database.db, orgId));
  customerId = await customerIn(database.db, orgId, { state_province: 'AB' }); // GST 5 %
});
afterAll(() => database.drop());

/** A fresh invoice of 100.00 + 5 % GST = 105.00, POSTED (or DRAFT). */
async function invoice(options: { post?: boolean } = {}): Promise<string> {
  const subscription = await subscribe(database.db, orgId, {
    customer_id: customerId,
    items: [{ product_id: seats, quantity: 10 }],
    start_date: new Date('2026-01-01T00:00:00Z'),
  });
  const run = await runBilling(database.db, {
    usage: usageSource(new PostgresUsageAggregator(database.db)),
    subscriptionIds: [subscription.id],
    now: new Date('2026-02-01T00:00:00Z'),
    post: options.post ?? true,
  });
  return run.invoice_ids[0]!;
}

const pay = (input: MoneyInput) => database.db.transaction((tx) => recordPayment(tx, input));
const refund = (input: MoneyInput) => database.db.transaction((tx) => createRefund(tx, input));
const credit = (input: MoneyInput) => database.db.transaction((tx) => createCreditMemo(tx, input));

async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const eventsFor = async (type: string, invoiceId: string) =>
  (await outbox(database.db, orgId, type)).filter(
    (e) => e.data.id === invoiceId || e.data.invoice_id === invoiceId,
  );

describe('payments', () => {
  it('POSTED -> PARTIALLY_PAID -> PAID, with payment.succeeded each time and invoice.paid once', async () => {
    const id = await invoice();
    const first = await pay({ invoiceId: id, amount: '40', method: 'CARD', reference: 'ch_1' });
    expect(first.transaction).toMatchObject({
      object: 'invoice_transaction',
      invoice_id: id,
      type: 'PAYMENT',
      amount: '40.00000000',
      method: 'CARD',
      status: 'COMPLETED',
      reference: 'ch_1',
    });
    expect(first.invoice).toMatchObject({
      status: 'PARTIALLY_PAID',
      amount_paid: '40.00000000',
      balance: '65.00000000',
    });
    expect(await eventsFor('invoice.paid', id)).toEqual([]);

    const second = await pay({ invoiceId: id, amount: '65.00', method: 'BANK_TRANSFER' });
    expect(second.invoice).toMatchObject({
      status: 'PAID',
      amount_paid: '105.00000000',
      balance: '0.00000000',
    });

    const succeeded = await eventsFor('payment.succeeded', id);
    expect(succeeded.map((e) => e.data)).toEqual([
      { ...first.transaction, customer_id: customerId },
      { ...second.transaction, customer_id: customerId },
    ]);
    const paid = await eventsFor('invoice.paid', id);
    expect(paid.map((e) => e.data)).toEqual([
      {
        id,
        object: 'invoice',
        customer_id: customerId,
        status: 'PAID',
        invoice_number: second.invoice.invoice_number,
        total: '105.00000000',
        balance: '0.00000000',
        currency: 'CAD',
      },
    ]);

    // nothing more can be paid, so invoice.paid can never come twice
    const again = await failure(pay({ invoiceId: id, amount: '1' }));
    expect(again.code).toBe('CONFLICT');
    expect(again.message).toMatch(
      /is PAID: a payment can only be applied to a POSTED or PARTIALLY_PAID invoice/,
    );
    expect(await eventsFor('invoice.paid', id)).toHaveLength(1);
    const timeline = await listInvoiceTransactions(database.db, orgId, id, { limit: 10, offset: 0 });
    expect(timeline.total).toBe(2);
  });

  it('records a payment, credit memo or refund once per reference: a repeat finds it, a different one is 409', async () => {
    const id = await invoice();
    const first = await pay({ invoiceId: id, amount: '105', method: 'CARD', reference: 'ch_once' });
    expect(first.invoice.status).toBe('PAID');
    // a script retrying after a timeout: the same transaction, nothing new (the invoice is PAID now)
    const repeats = await Promise.all([
      pay({ invoiceId: id, amount: '105.00', method: 'CARD', reference: 'ch_once' }),
      pay({ invoiceId: id, amount: '105', method: 'CARD', reference: 'ch_once' }),
    ]);
    for (const repeat of repeats) expect(repeat).toEqual(first);
    const other = await failure(pay({ invoiceId: id, amount: '5', method: 'CARD', reference: 'ch_once' }));
    expect(other.status).toBe(409);
    expect(other.message).toContain('already has a PAYMENT with reference ch_once (105.00000000 CAD, CARD)');
    // the same amount by another method is another payment too, not a repeat of this one
    const otherMethod = await failure(
      pay({ invoiceId: id, amount: '105', method: 'BANK_TRANSFER', reference: 'ch_once' }),
    );
    expect(otherMethod.status).toBe(409);
    expect(otherMethod.message).toContain('already has a PAYMENT with reference ch_once');

    const refunded = await refund({ invoiceId: id, amount: '5', method: 'CARD', reference: 're_once' });
    expect(await refund({ invoiceId: id, amount: '5', method: 'CARD', reference: 're_once' })).toEqual(
      refunded,
    );
    expect(refunded.invoice.amount_refunded).toBe('5.00000000');
    // a reference names one transaction of a type: a refund may carry its charge's reference
    const sameRef = await refund({ invoiceId: id, amount: '5', method: 'CARD', reference: 'ch_once' });
    expect(sameRef.transaction).toMatchObject({ type: 'REFUND', amount: '5.00000000' });
    expect(sameRef.invoice.amount_refunded).toBe('10.00000000');

    const { rows } = await database.db.query(
      'SELECT type, count(*)::int AS n FROM invoice_transactions WHERE invoice_id = $1 GROUP BY type ORDER BY type',
      [id],
    );
    expect(rows).toEqual([
      { type: 'PAYMENT', n: 1 },
      { type: 'REFUND', n: 2 },
    ]);
    expect(await eventsFor('payment.succeeded', id)).toHaveLength(1);
  });

  it('refuses more than the balance, a zero or malformed amount, and a DRAFT invoice', async () => {
    const id = await invoice();
    const over = await failure(pay({ invoiceId: id, amount: '105.00000001' }));
    expect(over.code).toBe('VALIDATION_ERROR');
    expect(over.details?.[0]).toMatchObject({ field: 'amount', code: 'out_of_range' });
    expect((await failure(pay({ invoiceId: id, amount: '0' }))).code).toBe('VALIDATION_ERROR');
    expect((await failure(pay({ invoiceId: id, amount: '1.5e2' }))).code).toBe('VALIDATION_ERROR');
    // payable amounts: money that moves is in whole cents
    const subCent = await failure(pay({ invoiceId: id, amount: '10.005' }));
    expect(subCent.details?.[0]).toMatchObject({ field: 'amount', code: 'invalid_format' });
    const draft = await invoice({ post: false });
    expect((await failure(pay({ invoiceId: draft, amount: '1' }))).message).toMatch(
      /is DRAFT.*\(post it first\)/,
    );
    expect(
      (await failure(pay({ invoiceId: '00000000-0000-4000-8000-000000000000', amount: '1' }))).code,
    ).toBe('NOT_FOUND');
  });

  it('takes the exact sub-cent balance, and refunds the exact sub-cent payment, of an invoice issued before the rule', async () => {
    // an invoice issued before payable amounts were checked may owe below the cent: its exact
    // balance settles it (nothing else below the cent does), and that payment can go back whole
    const id = await invoice();
    await database.db.query(
      `UPDATE invoices SET subtotal = '100.005', total = '105.005' WHERE org_id = $1 AND id = $2`,
      [orgId, id],
    );
    const near = await failure(pay({ invoiceId: id, amount: '105.004' }));
    expect(near.details?.[0]).toMatchObject({ field: 'amount', code: 'invalid_format' });
    const paid = await pay({ invoiceId: id, amount: '105.005' });
    expect(paid.invoice).toMatchObject({
      status: 'PAID',
      amount_paid: '105.00500000',
      balance: '0.00000000',
    });
    const part = await failure(refund({ invoiceId: id, amount: '0.005' }));
    expect(part.details?.[0]).toMatchObject({ field: 'amount', code: 'invalid_format' });
    const back = await refund({ invoiceId: id, amount: '105.005' });
    expect(back.invoice).toMatchObject({ status: 'REFUNDED', amount_refunded: '105.00500000' });
  });

  it('refunds the exact sub-cent rest of a payment after a part of it was refunded', async () => {
    // 105.005 paid on an invoice issued before the rule, 100.00 refunded: 5.005 is left to refund,
    // and that exact rest goes back (what was refunded before is not part of it)
    const id = await invoice();
    await database.db.query(
      `UPDATE invoices SET subtotal = '100.005', total = '105.005' WHERE org_id = $1 AND id = $2`,
      [orgId, id],
    );
    await pay({ invoiceId: id, amount: '100' });
    expect((await pay({ invoiceId: id, amount: '5.005' })).invoice).toMatchObject({
      status: 'PAID',
      balance: '0.00000000',
    });
    expect((await refund({ invoiceId: id, amount: '100' })).invoice.status).toBe('PARTIALLY_REFUNDED');
    const near = await failure(refund({ invoiceId: id, amount: '5.004' }));
    expect(near.details?.[0]).toMatchObject({ field: 'amount', code: 'invalid_format' });
    const back = await refund({ invoiceId: id, amount: '5.005' });
    expect(back.invoice).toMatchObject({ status: 'REFUNDED', amount_refunded: '105.00500000' });
  });

  it('a payment repeated with its reference and no method finds the EXTERNAL one it recorded', async () => {
    const id = await invoice();
    const first = await pay({ invoiceId: id, amount: '40', reference: 'bank_0042' });
    expect(first.transaction).toMatchObject({ method: 'EXTERNAL', reference: 'bank_0042' });
    expect(await pay({ invoiceId: id, amount: '40', reference: 'bank_0042' })).toEqual(first);
    expect(first.invoice).toMatchObject({ status: 'PARTIALLY_PAID', amount_paid: '40.00000000' });
    expect(await eventsFor('payment.succeeded', id)).toHaveLength(1);
  });

  it('a reference names a payment of one invoice: the same one on another invoice records its own', async () => {
    const first = await invoice();
    const second = await invoice();
    const paid = await pay({ invoiceId: first, amount: '105', method: 'CARD', reference: 'batch_7' });
    const other = await pay({ invoiceId: second, amount: '105', method: 'CARD', reference: 'batch_7' });
    expect(other.transaction.id).not.toBe(paid.transaction.id);
    expect(other.transaction).toMatchObject({ invoice_id: second, reference: 'batch_7' });
    expect(other.invoice).toMatchObject({ id: second, status: 'PAID', balance: '0.00000000' });
  });

  it('a credit memo lowers the balance like a payment, without a payment event', async () => {
    const id = await invoice();
    const memo = await credit({ invoiceId: id, amount: '5', note: 'Goodwill' });
    expect(memo.transaction).toMatchObject({ type: 'CREDIT_MEMO', method: 'EXTERNAL', note: 'Goodwill' });
    expect(memo.invoice).toMatchObject({
      status: 'PARTIALLY_PAID',
      amount_paid: '5.00000000',
      balance: '100.00000000',
    });
    expect(await eventsFor('payment.succeeded', id)).toEqual([]);
    const settled = await credit({ invoiceId: id, amount: '100' });
    expect(settled.invoice.status).toBe('PAID');
    expect(await eventsFor('invoice.paid', id)).toHaveLength(1);
  });

  it('refunds: PAID -> PARTIALLY_REFUNDED -> REFUNDED; the balance ignores refunds', async () => {
    const id = await invoice();
    await pay({ invoiceId: id, amount: '105' });
    const part = await refund({ invoiceId: id, amount: '5', method: 'CARD' });
    expect(part.transaction).toMatchObject({ type: 'REFUND', amount: '5.00000000', status: 'COMPLETED' });
    expect(part.invoice).toMatchObject({
      status: 'PARTIALLY_REFUNDED',
      amount_refunded: '5.00000000',
      amount_paid: '105.00000000',
      balance: '0.00000000',
    });
    const tooMuch = await failure(refund({ invoiceId: id, amount: '100.01' }));
    expect(tooMuch.code).toBe('VALIDATION_ERROR');
    const rest = await refund({ invoiceId: id, amount: '100' });
    expect(rest.invoice).toMatchObject({ status: 'REFUNDED', amount_refunded: '105.00000000' });
    expect((await failure(refund({ invoiceId: id, amount: '1' }))).message).toMatch(/is REFUNDED/);
  });

  it('refunds a partly paid invoice; nothing to refund when credit memos settled it; never a POSTED one', async () => {
    const partly = await invoice();
    await pay({ invoiceId: partly, amount: '50' });
    expect((await refund({ invoiceId: partly, amount: '50' })).invoice.status).toBe('REFUNDED');

    const byMemo = await invoice();
    await credit({ invoiceId: byMemo, amount: '105' });
    const nothing = await failure(refund({ invoiceId: byMemo, amount: '1' }));
    expect(nothing.code).toBe('CONFLICT');
    expect(nothing.message).toMatch(/nothing left to refund/);

    const posted = await invoice();
    expect((await failure(refund({ invoiceId: posted, amount: '1' }))).message).toMatch(
      /is POSTED: only a PAID, PARTIALLY_PAID or PARTIALLY_REFUNDED invoice can be refunded/,
    );
  });

  it('a refund does not cancel what is owed: a refunded invoice with a balance takes payments again', async () => {
    // 105.00: 60 paid, 20 of it refunded -> PARTIALLY_REFUNDED, 45.00 still owed
    const id = await invoice();
    await pay({ invoiceId: id, amount: '60', method: 'CARD' });
    const refunded = await refund({ invoiceId: id, amount: '20', method: 'CARD' });
    expect(refunded.invoice).toMatchObject({ status: 'PARTIALLY_REFUNDED', balance: '45.00000000' });
    // then paid in part, and in full: the status follows what is paid, the refund stays recorded
    const part = await pay({ invoiceId: id, amount: '15', method: 'CARD' });
    expect(part.invoice).toMatchObject({
      status: 'PARTIALLY_PAID',
      amount_paid: '75.00000000',
      amount_refunded: '20.00000000',
      balance: '30.00000000',
    });
    const rest = await credit({ invoiceId: id, amount: '30' });
    expect(rest.invoice).toMatchObject({
      status: 'PAID',
      balance: '0.00000000',
      amount_refunded: '20.00000000',
    });
    expect(await eventsFor('invoice.paid', id)).toHaveLength(1);
    // the money paid since can be refunded as any other (75 paid by PAYMENT, 20 given back: 55)
    expect((await refund({ invoiceId: id, amount: '55' })).invoice.status).toBe('REFUNDED');
    // with no balance left, nothing more is taken: 409, whatever was refunded
    const none = await failure(pay({ invoiceId: id, amount: '1' }));
    expect(none.code).toBe('CONFLICT');
    expect(none.message).toMatch(/is REFUNDED with no balance left: a payment can only be applied/);

    // a partial payment refunded whole (REFUNDED, 105.00 still owed) is paid in full at once
    const whole = await invoice();
    await pay({ invoiceId: whole, amount: '50' });
    expect((await refund({ invoiceId: whole, amount: '50' })).invoice).toMatchObject({
      status: 'REFUNDED',
      balance: '55.00000000',
    });
    const settled = await pay({ invoiceId: whole, amount: '55' });
    expect(settled.invoice).toMatchObject({
      status: 'PAID',
      amount_paid: '105.00000000',
      balance: '0.00000000',
    });
    expect(await eventsFor('invoice.paid', whole)).toHaveLength(1);
    // still never more than the balance
    const over = await invoice();
    await pay({ invoiceId: over, amount: '5' });
    await refund({ invoiceId: over, amount: '5' });
    expect((await failure(pay({ invoiceId: over, amount: '100.01' }))).code).toBe('VALIDATION_ERROR');
  });

  it('withdraw DRAFT or POSTED; post only a DRAFT; illegal moves are 409', async () => {
    const posted = await invoice();
    const withdrawn = await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: posted }));
    expect(withdrawn.status).toBe('WITHDRAWN');
    expect(
      (await failure(database.db.transaction((tx) => postInvoice(tx, { invoiceId: posted })))).message,
    ).toMatch(/is WITHDRAWN and cannot become POSTED \(WITHDRAWN is final\)/);
    expect((await failure(pay({ invoiceId: posted, amount: '1' }))).code).toBe('CONFLICT');

    const draft = await invoice({ post: false });
    expect((await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: draft }))).status).toBe(
      'WITHDRAWN',
    );

    const paid = await invoice();
    await pay({ invoiceId: paid, amount: '105' });
    const refused = await failure(database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: paid })));
    expect(refused.code).toBe('CONFLICT');
    expect(refused.message).toMatch(/is PAID and cannot become WITHDRAWN/);
    expect((await failure(database.db.transaction((tx) => postInvoice(tx, { invoiceId: paid })))).code).toBe(
      'CONFLICT',
    );
  });

  it('a POSTED invoice withdrawn stays final: the next invoice does not bill its proration lines again', async () => {
    // only a DRAFT withdrawn before it was posted gives back what it carried (docs/decisions.md
    // "A withdrawn draft's period is billed again"); a posted one withdrawn is an operator's decision
    const subscription = await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats, quantity: 10 }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
    await changeSubscription(database.db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: subscription.items[0]!.id, quantity: 20 }] },
      now: new Date('2026-01-16T00:00:00Z'),
    });
    const runAt = (now: string) =>
      runBilling(database.db, {
        usage: usageSource(new PostgresUsageAggregator(database.db)),
        subscriptionIds: [subscription.id],
        now: new Date(now),
      });
    const linesOf = async (invoiceId: string) =>
      (
        await database.db.query<{ description: string }>(
          'SELECT description FROM invoice_items WHERE invoice_id = $1 ORDER BY position',
          [invoiceId],
        )
      ).rows.map((row) => row.description);
    const february = (await runAt('2026-02-01T00:00:00Z')).invoice_ids[0]!;
    const carried = await linesOf(february);
    expect(carried.length).toBeGreaterThan(1); // the seats and the change's proration lines
    await database.db.transaction((tx) => withdrawInvoice(tx, { invoiceId: february, orgId }));
    const march = (await runAt('2026-03-01T00:00:00Z')).invoice_ids[0]!;
    expect(await linesOf(march)).toEqual([carried[0]]);
    const { rows } = await database.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM subscription_proration_lines WHERE subscription_id = $1 AND invoice_id = $2',
      [subscription.id, february],
    );
    expect(rows[0]!.n).toBe(carried.length - 1);
  });

  it('finds an invoice only within the organization it is asked for', async () => {
    const id = await invoice();
    const other = await createTestOrg(database.db);
    const error = await failure(pay({ invoiceId: id, orgId: other.orgId, amount: '1' }));
    expect(error.code).toBe('NOT_FOUND');
    expect((await getInvoice(database.db, orgId, id)).amount_paid).toBe('0.00000000');
  });

  it('a change that rolls back leaves no outbox row, no transaction and an unchanged invoice', async () => {
    const id = await invoice();
    const before = (await outbox(database.db, orgId)).length;
    await expect(
      database.db.transaction(async (tx) => {
        await recordPayment(tx, { invoiceId: id, amount: '105' });
        throw new Error('the caller failed after the payment');
      }),
    ).rejects.toThrow(/caller failed/);
    expect(await outbox(database.db, orgId)).toHaveLength(before);
    expect(await getInvoice(database.db, orgId, id)).toMatchObject({
      status: 'POSTED',
      amount_paid: '0.00000000',
    });
    expect((await listInvoiceTransactions(database.db, orgId, id, { limit: 10, offset: 0 })).total).toBe(0);
  });

  it('concurrent payments on one invoice apply one after the other: never more than the balance', async () => {
    const id = await invoice();
    const results = await Promise.allSettled([
      pay({ invoiceId: id, amount: '60' }),
      pay({ invoiceId: id, amount: '60' }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(await getInvoice(database.db, orgId, id)).toMatchObject({
      status: 'PARTIALLY_PAID',
      amount_paid: '60.00000000',
    });
  });

  it("counts in credit_balance a grant committed while the reader's transaction was open", async () => {
    // a repeat of a reference waits for the first call's commit, then reads the balance in a
    // transaction that began before the grant's effective instant: it must still count it
    const customer = await customerIn(database.db, orgId, { state_province: 'AB' });
    const reader = await database.db.transaction(async (tx) => {
      await tx.query('SELECT 1');
      await new Promise((resolve) => setTimeout(resolve, 20));
      await database.db.transaction((other) =>
        addCustomerCredit(other, { customerId: customer, amount: '12' }),
      );
      return getCustomer(tx, orgId, customer);
    });
    expect(reader.credit_balance).toBe('12.00000000');
  });

  it('adds a customer credit once per reference: a repeat adds nothing, another amount is 409', async () => {
    const customer = await customerIn(database.db, orgId, { state_province: 'AB' });
    const grant = (amount: string, reference?: string) =>
      database.db.transaction((tx) => addCustomerCredit(tx, { customerId: customer, amount, reference }));
    const repeats = await Promise.all([grant('25', 'promo-7'), grant('25.00', 'promo-7')]);
    expect(repeats.map((c) => c.credit_balance)).toEqual(['25.00000000', '25.00000000']);
    const other = await failure(grant('30', 'promo-7'));
    expect(other.status).toBe(409);
    expect(other.message).toContain('already has a credit with reference promo-7 (25.00000000)');
    // without a reference each call adds again, and every grant is on record
    await grant('5');
    expect((await grant('5')).credit_balance).toBe('35.00000000');
    // payable amounts: a credit below the cent is refused, naming the field
    const subCent = await failure(grant('0.125'));
    expect(subCent.status).toBe(422);
    expect(subCent.details?.[0]).toMatchObject({ field: 'amount', code: 'invalid_format' });
    const { rows } = await database.db.query(
      `SELECT amount, reference FROM credit_grants WHERE customer_id = $1 AND category = 'promotional'
        ORDER BY created_at, amount DESC`,
      [customer],
    );
    expect(rows).toEqual([
      { amount: '25.00000000', reference: 'promo-7' },
      { amount: '5.00000000', reference: null },
      { amount: '5.00000000', reference: null },
    ]);
  });

  it("never answers with another organization's customer for a legacy credit reference", async () => {
    // a reference given before grants existed is kept in customer_credit_grants only
    const customer = await customerIn(database.db, orgId, { state_province: 'AB' });
    await database.db.query(
      `INSERT INTO customer_credit_grants (org_id, customer_id, amount, reference) VALUES ($1, $2, 20, 'legacy-1')`,
      [orgId, customer],
    );
    const add = (org: number) =>
      database.db.transaction((tx) =>
        addCustomerCredit(tx, { customerId: customer, orgId: org, amount: '20', reference: 'legacy-1' }),
      );
    // honoured in its organization: nothing added again
    expect((await add(orgId)).id).toBe(customer);
    const another = await failure(
      database.db.transaction((tx) =>
        addCustomerCredit(tx, { customerId: customer, orgId, amount: '30', reference: 'legacy-1' }),
      ),
    );
    expect(another.status).toBe(409);
    expect(another.message).toContain('already has a credit with reference legacy-1 (20.00000000)');
    const other = await createTestOrg(database.db);
    expect((await failure(add(other.orgId))).code).toBe('NOT_FOUND');
  });
});
