import type { Queryable } from '../../libs/db/index.js';
import type { InvoiceStatus, SubscriptionStatus, TaxType } from '../../libs/schemas/index.js';
import {
  insertCustomer,
  insertInvoice,
  insertProduct,
  insertSubscription,
  type ProductFixture,
  type SubscriptionItemFixture,
  type TransactionFixture,
} from '../helpers/billing-fixtures.js';

/**
 * A small, fully known billing data set for one organization, written with the shared SQL
 * fixtures (test/helpers/billing-fixtures.ts), so amounts obey the model's invariants. Every
 * name carries `label`, so a test can tell whose data a tool returned. Dates are relative to
 * today (UTC) so "overdue" means the same thing whenever the test runs.
 *
 *   customers: Quebec (fr-CA), Ontario (en-CA), New York (en-US, tax-exempt)
 *   products:  flat recurring (active), tiered usage with 2 tiers (active), old plan (inactive)
 *   subscriptions: Quebec active CAD, Ontario trialing CAD, New York active USD
 *   invoices (CAD unless said):
 *     A POSTED          Quebec   total 114.97500000, due 10 days ago  -> open, overdue
 *     B PARTIALLY_PAID  Quebec   total 200, paid 55, due in 20 days   -> open, not overdue
 *     C PAID            Ontario  total 113, paid 113
 *     D DRAFT           Ontario  total 999 (not issued: never in totals)
 *     E POSTED USD      New York total 100, due 5 days ago            -> open, overdue
 *   transactions: payments 113 on C and 50 on B (completed), 25 on A (failed); a credit memo of 5 on B
 */
export interface BillingFixture {
  orgId: number;
  label: string;
  customers: { quebec: number; ontario: number; newYork: number };
  products: { flat: number; tiered: number; inactive: number };
  subscriptions: { quebec: number; ontario: number; newYork: number };
  invoices: { posted: string; partiallyPaid: string; paid: string; draft: string; postedUsd: string };
  payments: { partial: string; full: string; failed: string };
}

function isoDate(offsetDays: number): string {
  return new Date(Date.now() + offsetDays * 86_400_000).toISOString().slice(0, 10);
}

export async function seedBillingFixture(
  db: Queryable,
  orgId: number,
  label: string,
): Promise<BillingFixture> {
  const customer = async (
    name: string,
    country: string,
    province: string,
    taxExempt: boolean,
    at: string,
  ) => {
    const email = `${name.toLowerCase().replace(/\W+/g, '.')}@${label.toLowerCase()}.example`;
    const input = {
      name: `${label} ${name}`,
      email,
      country,
      state_province: province,
      tax_exempt: taxExempt,
    };
    return (await insertCustomer(db, orgId, input, new Date(at))).id;
  };
  const quebec = await customer('Quebec Client', 'CA', 'QC', false, '2026-01-01T00:00:00Z');
  const ontario = await customer('Ontario Client', 'CA', 'ON', false, '2026-01-02T00:00:00Z');
  const newYork = await customer('New York Client', 'US', 'NY', true, '2026-01-03T00:00:00Z');

  const product = async (name: string, at: string, fixture: ProductFixture) =>
    (
      await insertProduct(db, orgId, {
        name: `${label} ${name}`,
        sku: `${label}-${name}`.toUpperCase().replace(/\W+/g, '-'),
        createdAt: new Date(at),
        ...fixture,
      })
    ).id;
  const flat = await product('Flat Plan', '2026-01-01T00:00:00Z', { unitPrice: '49.99' });
  const tiered = await product('Tiered API Calls', '2026-01-02T00:00:00Z', {
    pricingType: 'usage',
    unitPrice: '0',
    tiers: {
      mode: 'graduated',
      steps: [
        { upTo: '1000', unitPrice: '0.01', flatFee: '0' },
        { upTo: null, unitPrice: '0.005', flatFee: '5' },
      ],
    },
  });
  const inactive = await product('Old Plan', '2026-01-03T00:00:00Z', {
    unitPrice: '10',
    currency: 'USD',
    isActive: false,
  });

  const subscription = async (
    customerId: number,
    status: SubscriptionStatus,
    currency: string,
    at: string,
    items: SubscriptionItemFixture[],
  ) => {
    const start = new Date(at);
    const fixture = { customerId, status, title: `${label} subscription`, currency, items };
    return (await insertSubscription(db, orgId, { ...fixture, startDate: start, createdAt: start })).id;
  };
  const seat = { productId: flat, unitPrice: '49.99' };
  const subQuebec = await subscription(quebec, 'active', 'CAD', '2026-01-05T00:00:00Z', [
    seat,
    { productId: tiered, quantity: 0, unitPrice: '0', usageType: 'metered', includedUnits: '1000' },
  ]);
  const subOntario = await subscription(ontario, 'trialing', 'CAD', '2026-01-06T00:00:00Z', [
    { ...seat, quantity: 2 },
  ]);
  const subNewYork = await subscription(newYork, 'active', 'USD', '2026-01-07T00:00:00Z', [
    { productId: inactive, unitPrice: '10' },
  ]);

  let invoiceCount = 0;
  /** One line of `subtotal` at `taxRate`, dated `issued` and due `due` days from today. */
  const invoice = (o: {
    customerId: number;
    subscriptionId: number;
    status: InvoiceStatus;
    subtotal: string;
    taxRate: string;
    taxType: TaxType | null;
    currency: string;
    issued: number;
    due: number;
    productId: number;
    transactions?: TransactionFixture[];
  }) =>
    insertInvoice(db, orgId, {
      customerId: o.customerId,
      subscriptionId: o.subscriptionId,
      status: o.status,
      periodStart: isoDate(o.issued),
      dueDate: isoDate(o.due),
      currency: o.currency,
      createdAt: new Date(`2026-02-0${++invoiceCount}T00:00:00Z`),
      items: [
        {
          productId: o.productId,
          description: `${label} line`,
          unitPrice: o.subtotal,
          taxRate: o.taxRate,
          taxType: o.taxType,
        },
      ],
      transactions: o.transactions ?? [],
    });
  const transaction = (
    type: TransactionFixture['type'],
    amount: string,
    method: TransactionFixture['method'],
    status: TransactionFixture['status'],
    at: string,
  ): TransactionFixture => ({
    type,
    amount,
    method,
    status,
    reference: `${label}-ref-${amount}`,
    createdAt: new Date(at),
  });
  const posted = await invoice({
    customerId: quebec,
    subscriptionId: subQuebec,
    status: 'POSTED',
    subtotal: '100',
    taxRate: '0.14975',
    taxType: 'GST_QST',
    currency: 'CAD',
    issued: -40,
    due: -10,
    productId: flat,
    transactions: [transaction('PAYMENT', '25', 'CARD', 'FAILED', '2026-02-12T00:00:00Z')],
  });
  const partiallyPaid = await invoice({
    customerId: quebec,
    subscriptionId: subQuebec,
    status: 'PARTIALLY_PAID',
    subtotal: '200',
    taxRate: '0',
    taxType: null,
    currency: 'CAD',
    issued: -10,
    due: 20,
    productId: flat,
    transactions: [
      transaction('PAYMENT', '50', 'BANK_TRANSFER', 'COMPLETED', '2026-02-11T00:00:00Z'),
      transaction('CREDIT_MEMO', '5', 'EXTERNAL', 'COMPLETED', '2026-02-09T00:00:00Z'),
    ],
  });
  const paid = await invoice({
    customerId: ontario,
    subscriptionId: subOntario,
    status: 'PAID',
    subtotal: '100',
    taxRate: '0.13',
    taxType: 'HST',
    currency: 'CAD',
    issued: -60,
    due: -30,
    productId: flat,
    transactions: [transaction('PAYMENT', '113', 'CARD', 'COMPLETED', '2026-02-10T00:00:00Z')],
  });
  const draft = await invoice({
    customerId: ontario,
    subscriptionId: subOntario,
    status: 'DRAFT',
    subtotal: '999',
    taxRate: '0',
    taxType: null,
    currency: 'CAD',
    issued: -1,
    due: 29,
    productId: flat,
  });
  const postedUsd = await invoice({
    customerId: newYork,
    subscriptionId: subNewYork,
    status: 'POSTED',
    subtotal: '100',
    taxRate: '0',
    taxType: 'EXEMPT',
    currency: 'USD',
    issued: -35,
    due: -5,
    productId: inactive,
  });

  return {
    orgId,
    label,
    customers: { quebec, ontario, newYork },
    products: { flat, tiered, inactive },
    subscriptions: { quebec: subQuebec, ontario: subOntario, newYork: subNewYork },
    invoices: {
      posted: posted.id,
      partiallyPaid: partiallyPaid.id,
      paid: paid.id,
      draft: draft.id,
      postedUsd: postedUsd.id,
    },
    payments: {
      partial: partiallyPaid.transactionIds[0]!,
      full: paid.transactionIds[0]!,
      failed: posted.transactionIds[0]!,
    },
  };
}

/**
 * A fingerprint of every table's content: md5 over each table's rows in a fixed order. Equal
 * before and after means nothing was inserted, updated or deleted anywhere.
 */
export async function databaseChecksum(db: Queryable): Promise<Record<string, string>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  const checksums: Record<string, string> = {};
  for (const { name } of tables) {
    const { rows } = await db.query<{ md5: string; count: number }>(
      `SELECT md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) AS md5, count(*) AS count FROM "${name}" t`,
    );
    checksums[name] = `${rows[0]!.count}:${rows[0]!.md5}`;
  }
  return checksums;
}
