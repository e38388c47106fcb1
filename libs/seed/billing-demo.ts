import { randomUUID } from 'node:crypto';
import {
  addCustomerCredit,
  addDaysToInstant,
  applyDunning,
  createCreditMemo,
  createRefund,
  postInvoice,
  recordPayment,
  runBilling,
  utcDate,
  withdrawInvoice,
} from '../billing/index.js';
import { createProduct, type NewProduct } from '../catalog/index.js';
import type { Queryable } from '../db/index.js';
import { formatMoney, parseMoney } from '../money/index.js';
import type { TransactionMethod } from '../schemas/index.js';
import { cancelSubscription, createSubscription, type NewSubscription } from '../subscriptions/index.js';
import { PostgresUsageAggregator, PostgresUsageSink, type UsageEventRecord } from '../usage/index.js';

/**
 * The billing half of the demo data, through the same paths the console uses (never raw inserts):
 * a catalog with every pricing type and mode, subscriptions in several states started months ago,
 * usage written as the Postgres sink writes it, a billing run over the past months, and payments,
 * credit memos, refunds and withdrawals that leave invoices in every status.
 */

type ProductKey =
  | 'platform'
  | 'seats'
  | 'seatsAnnual'
  | 'analytics'
  | 'analyticsQuarterly'
  | 'support'
  | 'onboarding'
  | 'gateway'
  | 'apiCalls'
  | 'storage'
  | 'compute'
  | 'messages'
  | 'messagesQuarterly'
  | 'legacy'
  | 'seatsUsd'
  | 'platformUsd'
  | 'apiCallsUsd';

const API_TIERS = [
  { up_to: '10000', unit_price: '0.002' },
  { up_to: '100000', unit_price: '0.0015' },
  { up_to: null, unit_price: '0.001' },
];

export const DEMO_PRODUCTS: Record<ProductKey, NewProduct> = {
  platform: {
    name: 'Platform fee',
    sku: 'PLAT-FEE',
    pricing_type: 'recurring',
    pricing_model: 'flat_fee',
    unit_price: '499.00',
    unit_label: 'month',
    description: 'Hosting, monitoring and the admin console.',
  },
  seats: {
    name: 'Team seats',
    sku: 'SEAT',
    pricing_type: 'recurring',
    unit_price: '25.00',
    unit_label: 'seat',
  },
  seatsAnnual: {
    name: 'Team seats (annual)',
    sku: 'SEAT-Y',
    pricing_type: 'recurring',
    unit_price: '250.00',
    unit_label: 'seat',
    description: 'Two months free against monthly seats.',
    default_billing_period: 'annually',
  },
  analytics: {
    name: 'Analytics seats',
    sku: 'ANL-SEAT',
    pricing_type: 'recurring',
    pricing_mode: 'volume',
    unit_label: 'seat',
    description: 'Volume pricing: every seat at the rate of the tier the total falls in.',
    tiers: [
      { up_to: '10', unit_price: '20' },
      { up_to: '50', unit_price: '15' },
      { up_to: null, unit_price: '10' },
    ],
  },
  analyticsQuarterly: {
    name: 'Analytics seats (quarterly)',
    sku: 'ANL-SEAT-Q',
    pricing_type: 'recurring',
    pricing_mode: 'volume',
    unit_label: 'seat',
    default_billing_period: 'quarterly',
    tiers: [
      { up_to: '10', unit_price: '60' },
      { up_to: '50', unit_price: '45' },
      { up_to: null, unit_price: '30' },
    ],
  },
  support: {
    name: 'Premium support',
    sku: 'SUP-PREM',
    pricing_type: 'recurring',
    unit_price: '199.00',
    category: 'support',
    default_billing_period: 'quarterly',
  },
  onboarding: {
    name: 'Onboarding',
    sku: 'ONB',
    pricing_type: 'one_time',
    unit_price: '750.00',
    category: 'service',
  },
  gateway: {
    name: 'Edge gateway',
    sku: 'HW-GW',
    pricing_type: 'one_time',
    unit_price: '129.00',
    category: 'hardware',
    unit_label: 'device',
  },
  apiCalls: {
    name: 'API calls',
    sku: 'USG-API',
    pricing_type: 'usage',
    pricing_mode: 'graduated',
    unit_label: 'calls',
    tiers: API_TIERS,
  },
  storage: {
    name: 'Storage',
    sku: 'USG-STO',
    pricing_type: 'usage',
    pricing_mode: 'volume',
    unit_label: 'GB',
    tiers: [
      { up_to: '100', unit_price: '0.10' },
      { up_to: '1000', unit_price: '0.08' },
      { up_to: null, unit_price: '0.05' },
    ],
  },
  compute: {
    name: 'Compute hours',
    sku: 'USG-CMP',
    pricing_type: 'usage',
    pricing_mode: 'flat',
    unit_label: 'hour',
    description: 'Stair-step pricing: a flat fee per band of hours.',
    tiers: [
      { up_to: '100', flat_fee: '49' },
      { up_to: '500', flat_fee: '199' },
      { up_to: null, flat_fee: '499' },
    ],
  },
  messages: {
    name: 'Messages',
    sku: 'USG-MSG',
    pricing_type: 'usage',
    unit_price: '0.0005',
    unit_label: 'message',
  },
  messagesQuarterly: {
    name: 'Messages (quarterly)',
    sku: 'USG-MSG-Q',
    pricing_type: 'usage',
    unit_price: '0.0005',
    unit_label: 'message',
    default_billing_period: 'quarterly',
  },
  legacy: {
    name: 'Legacy plan',
    sku: 'LEGACY',
    pricing_type: 'recurring',
    unit_price: '9.00',
    is_active: false,
  },
  seatsUsd: {
    name: 'Team seats (USD)',
    sku: 'SEAT-US',
    pricing_type: 'recurring',
    unit_price: '19.00',
    unit_label: 'seat',
    currency: 'USD',
  },
  platformUsd: {
    name: 'Platform fee (USD)',
    sku: 'PLAT-FEE-US',
    pricing_type: 'recurring',
    pricing_model: 'flat_fee',
    unit_price: '399.00',
    currency: 'USD',
  },
  apiCallsUsd: {
    name: 'API calls (USD)',
    sku: 'USG-API-US',
    pricing_type: 'usage',
    pricing_mode: 'graduated',
    unit_label: 'calls',
    currency: 'USD',
    tiers: API_TIERS,
  },
};

type Products = Record<ProductKey, number>;

interface Recipe {
  currency: 'CAD' | 'USD';
  items(p: Products, n: number): NewSubscription['items'];
  startDaysAgo: number;
  count: number;
  trialDays?: number;
  billingPeriod?: NewSubscription['billing_period'];
  term?: { months: number; autoRenew: boolean };
  /** cancel-at-period-end before the run ends the subscription in it; after, it stays flagged. */
  cancel?: 'now' | 'at-period-end-before-run' | 'at-period-end-after-run';
  /** Billed with post: false, so its invoices stay DRAFT. */
  draft?: boolean;
}

const RECIPES: Recipe[] = [
  {
    currency: 'CAD',
    count: 5,
    startDaysAgo: 125,
    items: (p, n) => [
      { product_id: p.seats, quantity: 3 + n * 2 },
      { product_id: p.apiCalls, included_units: '1000' },
    ],
  },
  {
    currency: 'CAD',
    count: 3,
    startDaysAgo: 95,
    items: (p) => [{ product_id: p.platform }, { product_id: p.storage }, { product_id: p.compute }],
  },
  {
    currency: 'CAD',
    count: 2,
    startDaysAgo: 200,
    billingPeriod: 'quarterly',
    items: (p, n) => [
      { product_id: p.analyticsQuarterly, quantity: 8 + n * 6 },
      { product_id: p.messagesQuarterly, included_units: '10000' },
    ],
  },
  {
    currency: 'CAD',
    count: 1,
    startDaysAgo: 250,
    billingPeriod: 'quarterly',
    term: { months: 6, autoRenew: false },
    items: (p) => [{ product_id: p.support }],
  },
  {
    currency: 'CAD',
    count: 1,
    startDaysAgo: 400,
    billingPeriod: 'annually',
    term: { months: 12, autoRenew: true },
    items: (p) => [{ product_id: p.seatsAnnual, quantity: 40 }],
  },
  {
    currency: 'CAD',
    count: 2,
    startDaysAgo: 70,
    items: (p, n) => [
      { product_id: p.seats, quantity: 2 + n },
      { product_id: p.onboarding },
      { product_id: p.gateway, quantity: 3 },
    ],
  },
  {
    currency: 'CAD',
    count: 2,
    startDaysAgo: 10,
    trialDays: 30,
    items: (p) => [{ product_id: p.seats, quantity: 5 }],
  },
  {
    currency: 'CAD',
    count: 1,
    startDaysAgo: 60,
    trialDays: 14,
    items: (p) => [{ product_id: p.seats, quantity: 4 }, { product_id: p.apiCalls }],
  },
  { currency: 'CAD', count: 1, startDaysAgo: -15, items: (p) => [{ product_id: p.platform }] },
  {
    currency: 'CAD',
    count: 1,
    startDaysAgo: 100,
    cancel: 'now',
    items: (p) => [{ product_id: p.seats, quantity: 2 }],
  },
  {
    currency: 'CAD',
    count: 1,
    startDaysAgo: 50,
    cancel: 'at-period-end-before-run',
    items: (p) => [{ product_id: p.seats, quantity: 1 }, { product_id: p.messages }],
  },
  {
    currency: 'CAD',
    count: 1,
    startDaysAgo: 40,
    cancel: 'at-period-end-after-run',
    items: (p) => [{ product_id: p.platform }],
  },
  {
    currency: 'CAD',
    count: 2,
    startDaysAgo: 65,
    draft: true,
    items: (p) => [
      { product_id: p.seats, quantity: 6 },
      { product_id: p.apiCalls, included_units: '500' },
    ],
  },
  {
    currency: 'USD',
    count: 4,
    startDaysAgo: 100,
    items: (p, n) => [
      { product_id: p.seatsUsd, quantity: 2 + n * 3 },
      { product_id: p.apiCallsUsd, included_units: '500' },
    ],
  },
  { currency: 'USD', count: 1, startDaysAgo: 45, items: (p) => [{ product_id: p.platformUsd }] },
];

/** Usage per event, by product: enough to cross tiers over a month. */
const USAGE_PER_EVENT: Partial<Record<ProductKey, [number, number]>> = {
  apiCalls: [200, 1400],
  apiCallsUsd: [150, 900],
  storage: [2, 12],
  compute: [1, 9],
  messages: [300, 1500],
};

export interface BillingDemoCounts {
  products: number;
  subscriptions: number;
  usage_events: number;
  invoices: number;
}

export interface BillingDemo {
  counts: BillingDemoCounts;
  /** The usage events written, to publish through the usage log once the transaction commits. */
  usage: UsageEventRecord[];
}

/**
 * Seeds one organization's billing data inside the caller's transaction. `customerIds` are the
 * organization's customers in creation order, with their countries.
 */
export async function seedBillingDemo(
  tx: Queryable,
  orgId: number,
  customers: { id: number; country: string }[],
  options: { now: Date; random: () => number },
): Promise<BillingDemo> {
  const { now, random } = options;
  const products = {} as Products;
  for (const [key, product] of Object.entries(DEMO_PRODUCTS) as [ProductKey, NewProduct][]) {
    products[key] = (await createProduct(tx, orgId, product)).id;
  }

  const pools = {
    CAD: customers.filter((c) => c.country === 'CA').map((c) => c.id),
    USD: customers.filter((c) => c.country === 'US').map((c) => c.id),
  };
  const used = { CAD: 0, USD: 0 };
  const nextCustomer = (currency: 'CAD' | 'USD') =>
    pools[currency][used[currency]++ % pools[currency].length]!;
  // two customers hold credit before the run: one covers part of an invoice, one a whole invoice
  await addCustomerCredit(tx, { customerId: pools.CAD[0]!, amount: '50.00' });
  await addCustomerCredit(tx, { customerId: pools.CAD[1]!, amount: '5000.00' });

  const drafts: number[] = [];
  const cancelAfterRun: { id: number; atPeriodEnd: boolean }[] = [];
  const usage: UsageEventRecord[] = [];
  let subscriptions = 0;
  for (const recipe of RECIPES) {
    for (let n = 0; n < recipe.count; n++) {
      const start = addDaysToInstant(startOfHour(now), -recipe.startDaysAgo);
      const subscription = await createSubscription(
        tx,
        orgId,
        {
          customer_id: nextCustomer(recipe.currency),
          items: recipe.items(products, n),
          trial_days: recipe.trialDays,
          billing_period: recipe.billingPeriod,
          term_type: recipe.term ? 'termed' : 'evergreen',
          initial_term_months: recipe.term?.months,
          auto_renew: recipe.term?.autoRenew,
          start_date: start,
        },
        { now },
      );
      subscriptions++;
      if (recipe.draft) drafts.push(subscription.id);
      if (recipe.cancel === 'at-period-end-before-run') {
        await cancelSubscription(tx, { subscriptionId: subscription.id, atPeriodEnd: true, now: start });
      }
      if (recipe.cancel === 'now' || recipe.cancel === 'at-period-end-after-run') {
        cancelAfterRun.push({ id: subscription.id, atPeriodEnd: recipe.cancel !== 'now' });
      }
      for (const item of subscription.items.filter((i) => i.usage_type === 'metered')) {
        const key = (Object.keys(products) as ProductKey[]).find((k) => products[k] === item.product_id)!;
        const [low, high] = USAGE_PER_EVENT[key] ?? [1, 10];
        // one event every other day from the start until now
        for (let at = start.getTime() + 3_600_000; at < now.getTime(); at += 2 * 86_400_000) {
          usage.push({
            id: randomUUID(),
            orgId,
            subscriptionItemId: item.id,
            idempotencyKey: `seed-${item.id}-${at}`,
            quantity: String(low + Math.floor(random() * (high - low + 1))),
            occurredAtMs: at,
            recordedAtMs: at + 1000,
          });
        }
      }
    }
  }
  // Written here for the billing run below, which reads it through this transaction (nothing is
  // committed yet); the caller publishes the same events through the usage log after the commit,
  // so every store holds them (the Postgres sink keeps the row it has).
  await new PostgresUsageSink(tx).write(usage);

  const usageSource = () => new PostgresUsageAggregator(tx);
  await runBilling(tx, { usage: usageSource, orgId, now, subscriptionIds: drafts, post: false });
  const billed = await runBilling(tx, { usage: usageSource, orgId, now });
  for (const { id, atPeriodEnd } of cancelAfterRun) {
    await cancelSubscription(tx, { subscriptionId: id, atPeriodEnd, now });
  }
  await settleInvoices(tx, orgId, now);
  // one draft posted by hand, as an operator would after review
  const { rows: draftRows } = await tx.query<{ id: string }>(
    `SELECT id FROM invoices WHERE org_id = $1 AND status = 'DRAFT' ORDER BY period_start, invoice_number LIMIT 1`,
    [orgId],
  );
  if (draftRows[0]) await postInvoice(tx, { invoiceId: draftRows[0].id });
  // the subscriptions left with overdue invoices become past due, as at the next billing run
  await applyDunning(tx, utcDate(now), { orgId });

  return {
    counts: {
      products: Object.keys(products).length,
      subscriptions,
      usage_events: usage.length,
      invoices: billed.invoices_created,
    },
    usage,
  };
}

const METHODS: TransactionMethod[] = ['CARD', 'BANK_TRANSFER', 'STRIPE', 'PAYPAL', 'EXTERNAL'];

/**
 * Moves the posted invoices, oldest first, through every status: most paid (some in two
 * payments, some partly by credit memo), some partly paid, refunded in part or in full, withdrawn,
 * and some left POSTED (the old ones among them overdue).
 */
async function settleInvoices(tx: Queryable, orgId: number, now: Date): Promise<void> {
  const { rows } = await tx.query<{ id: string; balance: string }>(
    `SELECT id, (total - amount_paid)::numeric(20, 8)::text AS balance FROM invoices
      WHERE org_id = $1 AND status = 'POSTED' AND total > 0
      ORDER BY period_start, invoice_number`,
    [orgId],
  );
  for (const [index, invoice] of rows.entries()) {
    const balance = parseMoney(invoice.balance);
    const half = formatMoney(balance / 2n - ((balance / 2n) % 1_000_000n));
    const rest = formatMoney(balance - parseMoney(half));
    const method = METHODS[index % METHODS.length]!;
    const ref = { invoiceId: invoice.id, now };
    const pay = (amount: string) =>
      recordPayment(tx, { ...ref, amount, method, reference: `seed-${index}-${amount}` });
    switch (index % 10) {
      case 0:
      case 1:
      case 2:
        await pay(invoice.balance);
        break;
      case 3:
        await createCreditMemo(tx, { ...ref, amount: half, note: 'Service credit for an outage' });
        await pay(rest);
        break;
      case 4:
        await pay(half);
        await pay(rest);
        break;
      case 5:
        await pay(half);
        break;
      case 6:
        await pay(invoice.balance);
        await createRefund(tx, { ...ref, amount: half, method, note: 'Partial refund: seats removed' });
        break;
      case 7:
        await pay(invoice.balance);
        await createRefund(tx, { ...ref, amount: invoice.balance, method, note: 'Refunded in full' });
        break;
      case 8:
        await withdrawInvoice(tx, ref);
        break;
      default:
      // left POSTED
    }
  }
}

function startOfHour(instant: Date): Date {
  return new Date(Math.floor(instant.getTime() / 3_600_000) * 3_600_000);
}
