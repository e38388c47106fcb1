import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  addCustomerCredit,
  postInvoice,
  runBilling,
  type UsageForTransaction,
  usageSource,
} from '../../libs/billing/index.js';
import { getCustomer } from '../../libs/customers/index.js';
import { getInvoice, listInvoiceTransactions } from '../../libs/invoices/index.js';
import { formatMoney, parseMoney } from '../../libs/money/index.js';
import { PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { basicCatalog, customerIn, outbox, subscribe } from './fixtures.js';

/*
 * Posting a DRAFT later (`invoice post`, collection/invoice-operations.ts) settles it as the billing
 * run's posting does: the customer's credit pays what it can, as a CREDIT_MEMO, AND the credit is
 * reduced by exactly that. Either half alone is a bug: an invoice left unpaid while the customer
 * holds credit, or one paid by credit that is still there to pay the next. Read through the public
 * representations (invoice, its transactions, the customer's credit_balance), not the tables.
 * Invoices of 10.00 + 13 % HST = 11.30.
 */

let database: TestDatabase;
let usage: UsageForTransaction;

beforeAll(async () => {
  database = await createTestDatabase('draft_posting_credit');
  usage = usageSource(new PostgresUsageAggregator(database.db));
});
afterAll(() => database.drop());

/** A customer with `credit` and `drafts` DRAFT invoices of 11.30, in one organization. */
async function draftsWithCredit(credit: string, drafts: number) {
  const { orgId } = await createTestOrg(database.db);
  const { seats } = await basicCatalog(database.db, orgId);
  const customerId = await customerIn(database.db, orgId);
  await addCustomerCredit(database.db, { customerId, amount: credit });
  for (let i = 0; i < drafts; i++) {
    await subscribe(database.db, orgId, {
      customer_id: customerId,
      items: [{ product_id: seats }],
      start_date: new Date('2026-01-01T00:00:00Z'),
    });
  }
  const run = await runBilling(database.db, {
    usage,
    orgId,
    post: false,
    now: new Date('2026-02-01T00:00:00Z'),
  });
  expect(run.invoice_ids).toHaveLength(drafts);
  // a draft consumes nothing: the credit waits for the posting
  expect((await getCustomer(database.db, orgId, customerId)).credit_balance).toBe(
    formatMoney(parseMoney(credit)),
  );
  return { orgId, customerId, invoiceIds: run.invoice_ids };
}

const post = (invoiceId: string) => database.db.transaction((tx) => postInvoice(tx, { invoiceId }));
const creditOf = async (orgId: number, customerId: number) =>
  (await getCustomer(database.db, orgId, customerId)).credit_balance;
const memosOf = async (orgId: number, invoiceId: string) =>
  (await listInvoiceTransactions(database.db, orgId, invoiceId, { limit: 100, offset: 0 })).data.map((t) => [
    t.type,
    t.amount,
    t.status,
  ]);

describe('posting a DRAFT later', () => {
  it('credit above the total: paid by a credit memo of the total, the credit reduced by it, invoice.paid', async () => {
    const { orgId, customerId, invoiceIds } = await draftsWithCredit('100', 1);
    const id = invoiceIds[0]!;
    expect(await creditOf(orgId, customerId)).toBe('100.00000000');
    expect((await getInvoice(database.db, orgId, id)).status).toBe('DRAFT');

    const posted = await post(id);
    expect(posted).toMatchObject({ status: 'PAID', amount_paid: '11.30000000', balance: '0.00000000' });
    expect(await memosOf(orgId, id)).toEqual([['CREDIT_MEMO', '11.30000000', 'COMPLETED']]);
    expect(await creditOf(orgId, customerId)).toBe('88.70000000');
    const paid = await outbox(database.db, orgId, 'invoice.paid');
    expect(paid.map((event) => [event.data.id, event.data.status])).toEqual([[id, 'PAID']]);
  });

  it('credit below the total: partly paid by all of it, the credit down to zero, no invoice.paid', async () => {
    const { orgId, customerId, invoiceIds } = await draftsWithCredit('5', 1);
    const posted = await post(invoiceIds[0]!);
    expect(posted).toMatchObject({
      status: 'PARTIALLY_PAID',
      amount_paid: '5.00000000',
      balance: '6.30000000',
    });
    expect(await memosOf(orgId, invoiceIds[0]!)).toEqual([['CREDIT_MEMO', '5.00000000', 'COMPLETED']]);
    expect(await creditOf(orgId, customerId)).toBe('0.00000000');
    expect(await outbox(database.db, orgId, 'invoice.paid')).toEqual([]);
  });

  it('two drafts posted one after the other: the second gets only what the first left', async () => {
    // 15.00 of credit: the first (11.30) is paid whole, the second gets the 3.70 left, then none is left
    const { orgId, customerId, invoiceIds } = await draftsWithCredit('15', 2);
    const [first, second] = invoiceIds as [string, string];
    expect(await post(first)).toMatchObject({ status: 'PAID', amount_paid: '11.30000000' });
    expect(await creditOf(orgId, customerId)).toBe('3.70000000');
    expect(await post(second)).toMatchObject({ status: 'PARTIALLY_PAID', amount_paid: '3.70000000' });
    expect(await memosOf(orgId, second)).toEqual([['CREDIT_MEMO', '3.70000000', 'COMPLETED']]);
    expect(await creditOf(orgId, customerId)).toBe('0.00000000');
  });
});
