/**
 * SQL fixtures for TESTS ONLY: catalog, subscriptions, invoices and transactions written straight
 * into the tables, so read endpoints can be tested while the billing engine that normally writes
 * them is built elsewhere. Production code and the seed never insert like this: they go through
 * the domain (libs/billing, libs/seed). Amounts are computed with libs/money, so fixtures obey the
 * model's invariants (line totals, tax, total, amount_paid from completed payments).
 */
import { createCustomer } from '../../libs/customers/index.js';
import type { Queryable } from '../../libs/db/index.js';
import {
  addScaled,
  formatMoney,
  formatQuantity,
  MONEY_SCALE,
  multiplyScaled,
  parseMoney,
  parseScaled,
  QUANTITY_SCALE,
} from '../../libs/money/index.js';
import {
  type BillingPeriod,
  CreateCustomer,
  type Customer,
  INVOICE_STATUSES,
  type InvoiceStatus,
  type Product,
  type Subscription,
  type SubscriptionItem,
  type SubscriptionStatus,
  type TaxType,
  type TransactionMethod,
  type TransactionStatus,
  type TransactionType,
} from '../../libs/schemas/index.js';

export interface ProductFixture {
  name?: string;
  sku?: string;
  description?: string;
  unitPrice?: string;
  currency?: string;
  unitLabel?: string;
  category?: Product['category'];
  productType?: Product['product_type'];
  pricingType?: Product['pricing_type'];
  pricingModel?: Product['pricing_model'];
  /** Tiers make the product `tiered` with this mode; without them it is `linear`. */
  tiers?: {
    mode: NonNullable<Product['pricing_mode']>;
    steps: { upTo: string | null; unitPrice: string; flatFee?: string }[];
  };
  defaultBillingPeriod?: BillingPeriod;
  externalId?: string;
  isActive?: boolean;
  metadata?: Record<string, unknown>;
  createdAt?: Date;
}

export async function insertProduct(
  db: Queryable,
  orgId: number,
  fixture: ProductFixture = {},
): Promise<{ id: number }> {
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO products (org_id, name, sku, description, unit_price, currency, unit_label, category, product_type,
       pricing_type, pricing_model, pricing_scheme, pricing_mode, default_billing_period, external_id, is_active,
       metadata, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
       COALESCE($18, now()), COALESCE($18, now()))
     RETURNING id`,
    [
      orgId,
      fixture.name ?? 'Product',
      fixture.sku ?? '',
      fixture.description ?? '',
      fixture.unitPrice ?? '10',
      fixture.currency ?? 'CAD',
      fixture.unitLabel ?? 'unit',
      fixture.category ?? 'software',
      fixture.productType ?? 'standard',
      fixture.pricingType ?? 'recurring',
      fixture.pricingModel ?? 'per_unit',
      fixture.tiers ? 'tiered' : 'linear',
      fixture.tiers?.mode ?? null,
      fixture.defaultBillingPeriod ?? 'monthly',
      fixture.externalId ?? '',
      fixture.isActive ?? true,
      JSON.stringify(fixture.metadata ?? {}),
      fixture.createdAt ?? null,
    ],
  );
  const product = rows[0]!;
  for (const [position, step] of (fixture.tiers?.steps ?? []).entries()) {
    await db.query(
      `INSERT INTO product_price_tiers (org_id, product_id, position, up_to, unit_price, flat_fee)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [orgId, product.id, position, step.upTo, step.unitPrice, step.flatFee ?? '0'],
    );
  }
  return product;
}

/** A customer through the public create path (customers are a public write). */
export async function insertCustomer(
  db: Queryable,
  orgId: number,
  input: Partial<CreateCustomer> & { name: string },
  createdAt?: Date,
): Promise<Customer> {
  const customer = await createCustomer(db, orgId, CreateCustomer.parse(input));
  if (!createdAt) return customer;
  await db.query('UPDATE customers SET created_at = $3, updated_at = $3 WHERE org_id = $1 AND id = $2', [
    orgId,
    customer.id,
    createdAt,
  ]);
  return { ...customer, created_at: createdAt.toISOString(), updated_at: createdAt.toISOString() };
}

export interface SubscriptionItemFixture {
  productId: number;
  quantity?: number;
  unitPrice?: string;
  usageType?: SubscriptionItem['usage_type'];
  includedUnits?: string;
}

export interface SubscriptionFixture {
  customerId: number;
  status?: SubscriptionStatus;
  title?: string;
  billingPeriod?: BillingPeriod;
  currency?: string;
  startDate?: Date;
  termType?: Subscription['term_type'];
  initialTermMonths?: number;
  trialEndDate?: Date | null;
  canceledAt?: Date | null;
  cancelAtPeriodEnd?: boolean;
  items?: SubscriptionItemFixture[];
  createdAt?: Date;
}

export async function insertSubscription(
  db: Queryable,
  orgId: number,
  fixture: SubscriptionFixture,
): Promise<{ id: number; itemIds: number[] }> {
  const start = fixture.startDate ?? new Date('2026-01-01T00:00:00Z');
  const periodEnd = new Date(start);
  periodEnd.setUTCMonth(periodEnd.getUTCMonth() + 1);
  const termType = fixture.termType ?? 'evergreen';
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO subscriptions (org_id, customer_id, status, title, start_date, next_billing_date, billing_period,
       billing_anchor_day, current_period_start, current_period_end, term_type, initial_term_months,
       trial_end_date, cancel_at_period_end, canceled_at, currency, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $5, $6, $9, $10, $11, $12, $13, $14, COALESCE($15, now()),
       COALESCE($15, now()))
     RETURNING id`,
    [
      orgId,
      fixture.customerId,
      fixture.status ?? 'active',
      fixture.title ?? 'Subscription',
      start,
      periodEnd,
      fixture.billingPeriod ?? 'monthly',
      start.getUTCDate(),
      termType,
      termType === 'termed' ? (fixture.initialTermMonths ?? 12) : null,
      fixture.trialEndDate ?? null,
      fixture.cancelAtPeriodEnd ?? false,
      fixture.canceledAt ?? null,
      fixture.currency ?? 'CAD',
      fixture.createdAt ?? null,
    ],
  );
  const subscription = rows[0]!;
  const itemIds: number[] = [];
  for (const item of fixture.items ?? []) {
    const inserted = await db.query<{ id: number }>(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type, included_units)
       VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`,
      [
        orgId,
        subscription.id,
        item.productId,
        item.quantity ?? 1,
        item.unitPrice ?? '10',
        item.usageType ?? 'licensed',
        item.includedUnits ?? '0',
      ],
    );
    itemIds.push(inserted.rows[0]!.id);
  }
  return { id: subscription.id, itemIds };
}

export interface InvoiceItemFixture {
  productId: number;
  description?: string;
  /** Decimal text, up to 4 fractional digits. */
  quantity?: string;
  unitPrice?: string;
  /** Tax rate as a decimal fraction ("0.05" for GST); 0 when omitted. */
  taxRate?: string;
  taxType?: TaxType | null;
}

export interface TransactionFixture {
  type: TransactionType;
  amount: string;
  method?: TransactionMethod;
  status?: TransactionStatus;
  reference?: string | null;
  note?: string | null;
  createdAt?: Date;
}

export interface InvoiceFixture {
  customerId: number;
  subscriptionId: number;
  status?: InvoiceStatus;
  /** The period's first day (YYYY-MM-DD); a subscription's period is invoiced once. */
  periodStart?: string;
  invoiceDate?: string;
  dueDate?: string;
  currency?: string;
  items?: InvoiceItemFixture[];
  /**
   * Transactions behind the balance. Omitted: what the status implies (PAID: one payment of the
   * total; PARTIALLY_PAID: half; REFUNDED / PARTIALLY_REFUNDED: a payment and a legacy refund).
   */
  transactions?: TransactionFixture[];
  createdAt?: Date;
}

export interface InsertedInvoice {
  id: string;
  invoiceNumber: string;
  total: string;
  taxAmount: string;
  amountPaid: string;
  amountRefunded: string;
  transactionIds: string[];
}

let periodCounter = 0;

/** The next per-organization invoice number, as the billing engine hands them out. */
async function nextInvoiceNumber(db: Queryable, orgId: number): Promise<string> {
  const { rows } = await db.query<{ seq: number }>(
    'UPDATE organizations SET invoice_number_seq = invoice_number_seq + 1 WHERE id = $1 RETURNING invoice_number_seq AS seq',
    [orgId],
  );
  return `INV-${String(rows[0]!.seq).padStart(6, '0')}`;
}

function impliedTransactions(status: InvoiceStatus, total: bigint): TransactionFixture[] {
  const half = formatMoney(total / 2n);
  const all = formatMoney(total);
  if (total === 0n) return [];
  switch (status) {
    case 'PAID':
      return [{ type: 'PAYMENT', amount: all, method: 'CARD', status: 'COMPLETED' }];
    case 'PARTIALLY_PAID':
      return [{ type: 'PAYMENT', amount: half, method: 'BANK_TRANSFER', status: 'COMPLETED' }];
    case 'REFUNDED':
      return [
        { type: 'PAYMENT', amount: all, method: 'CARD', status: 'COMPLETED' },
        { type: 'REFUND', amount: all, method: 'CARD', status: 'COMPLETED' },
      ];
    case 'PARTIALLY_REFUNDED':
      return [
        { type: 'PAYMENT', amount: all, method: 'STRIPE', status: 'COMPLETED' },
        { type: 'REFUND', amount: half, method: 'STRIPE', status: 'COMPLETED' },
      ];
    default:
      return [];
  }
}

/**
 * An invoice with items and transactions. Line total = quantity x unit price, tax = line x rate,
 * both rounded half-even at 8 digits; amount_paid = completed PAYMENT + CREDIT_MEMO amounts and
 * amount_refunded = completed REFUND amounts (docs/architecture.md, "Rules of the contract").
 */
export async function insertInvoice(
  db: Queryable,
  orgId: number,
  fixture: InvoiceFixture,
): Promise<InsertedInvoice> {
  const status = fixture.status ?? 'POSTED';
  const items = (fixture.items ?? []).map((item) => {
    const quantity = parseScaled(item.quantity ?? '1', QUANTITY_SCALE);
    const unitPrice = parseMoney(item.unitPrice ?? '10');
    const line = multiplyScaled(quantity, QUANTITY_SCALE, unitPrice, MONEY_SCALE, MONEY_SCALE);
    const tax = multiplyScaled(line, MONEY_SCALE, parseScaled(item.taxRate ?? '0', 8), 8, MONEY_SCALE);
    return { ...item, quantity, unitPrice, line, tax };
  });
  const subtotal = addScaled(...items.map((item) => item.line));
  const taxAmount = addScaled(...items.map((item) => item.tax));
  const total = subtotal + taxAmount;
  const transactions = fixture.transactions ?? impliedTransactions(status, total);
  const completed = (type: TransactionType) =>
    addScaled(
      ...transactions
        .filter((t) => t.type === type && (t.status ?? 'COMPLETED') === 'COMPLETED')
        .map((t) => parseMoney(t.amount)),
    );
  const amountPaid = completed('PAYMENT') + completed('CREDIT_MEMO');
  const amountRefunded = completed('REFUND');

  const invoiceNumber = await nextInvoiceNumber(db, orgId);
  // a subscription's period is invoiced once (UNIQUE (subscription_id, period_start)): fixtures
  // that do not care about periods get distinct ones
  const start = fixture.periodStart ?? shiftDays('2000-01-01', ++periodCounter);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO invoices (org_id, invoice_number, customer_id, subscription_id, invoice_date, period_start, period_end,
       due_date, status, subtotal, tax_amount, total, amount_paid, amount_refunded, currency, posted_at, created_at,
       updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
       CASE WHEN $9 = 'DRAFT' THEN NULL ELSE COALESCE($16, now()) END, COALESCE($16, now()), COALESCE($16, now()))
     RETURNING id`,
    [
      orgId,
      invoiceNumber,
      fixture.customerId,
      fixture.subscriptionId,
      fixture.invoiceDate ?? start,
      start,
      shiftDays(start, 30),
      fixture.dueDate ?? shiftDays(fixture.invoiceDate ?? start, 30),
      status,
      formatMoney(subtotal),
      formatMoney(taxAmount),
      formatMoney(total),
      formatMoney(amountPaid),
      formatMoney(amountRefunded),
      fixture.currency ?? 'CAD',
      fixture.createdAt ?? null,
    ],
  );
  const invoiceId = rows[0]!.id;
  for (const [position, item] of items.entries()) {
    await db.query(
      `INSERT INTO invoice_items (org_id, invoice_id, position, product_id, description, quantity, unit_price,
         line_total_pre_tax, tax_amount, tax_type)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
      [
        orgId,
        invoiceId,
        position,
        item.productId,
        item.description ?? `Item ${position + 1}`,
        formatQuantity(item.quantity),
        formatMoney(item.unitPrice),
        formatMoney(item.line),
        formatMoney(item.tax),
        item.taxType === undefined ? (item.tax > 0n ? 'GST' : null) : item.taxType,
      ],
    );
  }
  const transactionIds: string[] = [];
  for (const transaction of transactions) {
    transactionIds.push(await insertTransaction(db, orgId, invoiceId, transaction));
  }
  return {
    id: invoiceId,
    invoiceNumber,
    total: formatMoney(total),
    taxAmount: formatMoney(taxAmount),
    amountPaid: formatMoney(amountPaid),
    amountRefunded: formatMoney(amountRefunded),
    transactionIds,
  };
}

/** One row of an invoice's financial timeline; it does not touch the invoice's amounts. */
export async function insertTransaction(
  db: Queryable,
  orgId: number,
  invoiceId: string,
  transaction: TransactionFixture,
): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status, reference, note, created_at,
       updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, COALESCE($9, now()), COALESCE($9, now())) RETURNING id`,
    [
      orgId,
      invoiceId,
      transaction.type,
      transaction.amount,
      transaction.method ?? 'CARD',
      transaction.status ?? 'COMPLETED',
      transaction.reference ?? null,
      transaction.note ?? null,
      transaction.createdAt ?? null,
    ],
  );
  return rows[0]!.id;
}

function shiftDays(date: string, days: number): string {
  const shifted = new Date(`${date}T00:00:00Z`);
  shifted.setUTCDate(shifted.getUTCDate() + days);
  return shifted.toISOString().slice(0, 10);
}

export interface BillingScenario {
  customers: { quebec: Customer; ontario: Customer; newYork: Customer };
  products: {
    seats: number;
    apiCalls: number;
    storage: number;
    setupFee: number;
    support: number;
    retired: number;
  };
  subscriptions: { active: number; trialing: number; canceled: number; pastDue: number };
  meteredItemIds: number[];
  invoices: Record<InvoiceStatus, InsertedInvoice>;
}

/**
 * One organization's worth of everything: products of every pricing type and mode (tiers
 * included), customers in Quebec, Ontario and New York, subscriptions in several statuses with
 * licensed and metered items, and one invoice in every status with its transactions.
 */
export async function insertBillingScenario(db: Queryable, orgId: number): Promise<BillingScenario> {
  const quebec = await insertCustomer(db, orgId, {
    name: 'Amélie Côté',
    email: 'amelie@example.com',
    address_line1: '1000 rue Sainte-Catherine O',
    city: 'Montréal',
    state_province: 'QC',
    postal_code: 'H3B 1A1',
    country: 'CA',
  });
  const ontario = await insertCustomer(db, orgId, {
    name: 'Maple Analytics Inc.',
    contact_name: 'Jordan Lee',
    city: 'Toronto',
    state_province: 'ON',
    postal_code: 'M5V 2T6',
    country: 'CA',
    tax_id: '123456789RT0001',
  });
  const newYork = await insertCustomer(db, orgId, {
    name: 'Hudson Labs LLC',
    city: 'New York',
    state_province: 'NY',
    postal_code: '10001',
    country: 'US',
  });

  const seats = await insertProduct(db, orgId, {
    name: 'Seats',
    sku: 'SEAT',
    unitPrice: '49.99',
    unitLabel: 'seat',
  });
  const apiCalls = await insertProduct(db, orgId, {
    name: 'API calls',
    sku: 'API',
    unitPrice: '0.00125',
    category: 'usage',
    pricingType: 'usage',
    unitLabel: 'call',
    tiers: {
      mode: 'graduated',
      steps: [
        { upTo: '10000', unitPrice: '0.002' },
        { upTo: null, unitPrice: '0.001' },
      ],
    },
  });
  const storage = await insertProduct(db, orgId, {
    name: 'Storage',
    sku: 'GB',
    category: 'usage',
    pricingType: 'usage',
    unitLabel: 'GB',
    tiers: {
      mode: 'volume',
      steps: [
        { upTo: '100', unitPrice: '0.10' },
        { upTo: null, unitPrice: '0.05' },
      ],
    },
  });
  const setupFee = await insertProduct(db, orgId, {
    name: 'Onboarding',
    sku: 'SETUP',
    unitPrice: '500',
    category: 'service',
    pricingType: 'one_time',
    pricingModel: 'flat_fee',
  });
  const support = await insertProduct(db, orgId, {
    name: 'Support bundle',
    sku: 'SUP',
    category: 'support',
    productType: 'bundle',
    defaultBillingPeriod: 'annually',
    tiers: {
      mode: 'flat',
      steps: [
        { upTo: '5', unitPrice: '0', flatFee: '1000' },
        { upTo: null, unitPrice: '0', flatFee: '2500' },
      ],
    },
    metadata: { tier: 'gold', contacts: 3 },
  });
  const retired = await insertProduct(db, orgId, {
    name: 'Legacy plan',
    sku: 'OLD',
    isActive: false,
    externalId: 'legacy-1',
  });

  const active = await insertSubscription(db, orgId, {
    customerId: quebec.id,
    status: 'active',
    title: 'Team plan',
    items: [
      { productId: seats.id, quantity: 5, unitPrice: '49.99' },
      { productId: apiCalls.id, usageType: 'metered', unitPrice: '0.00125', includedUnits: '1000' },
      { productId: storage.id, usageType: 'metered', unitPrice: '0.10' },
    ],
  });
  const trialing = await insertSubscription(db, orgId, {
    customerId: ontario.id,
    status: 'trialing',
    trialEndDate: new Date('2026-02-01T00:00:00Z'),
    items: [{ productId: seats.id, quantity: 2, unitPrice: '49.99' }],
  });
  const canceled = await insertSubscription(db, orgId, {
    customerId: newYork.id,
    status: 'canceled',
    termType: 'termed',
    initialTermMonths: 12,
    canceledAt: new Date('2026-03-15T12:00:00Z'),
    items: [{ productId: support.id, quantity: 1, unitPrice: '1000' }],
  });
  const pastDue = await insertSubscription(db, orgId, {
    customerId: ontario.id,
    status: 'past_due',
    items: [{ productId: apiCalls.id, usageType: 'metered', unitPrice: '0.002', includedUnits: '0' }],
  });

  const invoices = {} as Record<InvoiceStatus, InsertedInvoice>;
  for (const [n, status] of INVOICE_STATUSES.entries()) {
    invoices[status] = await insertInvoice(db, orgId, {
      customerId: quebec.id,
      subscriptionId: active.id,
      status,
      periodStart: shiftDays('2025-01-01', 31 * n),
      items: [
        {
          productId: seats.id,
          description: 'Seats (5 x Team plan)',
          quantity: '5',
          unitPrice: '49.99',
          taxRate: '0.14975',
          taxType: 'GST_QST',
        },
        {
          productId: apiCalls.id,
          description: 'API calls above 1,000 included',
          quantity: '12345.5',
          unitPrice: '0.00125',
          taxRate: '0.14975',
          taxType: 'GST_QST',
        },
      ],
    });
  }

  return {
    customers: { quebec, ontario, newYork },
    products: {
      seats: seats.id,
      apiCalls: apiCalls.id,
      storage: storage.id,
      setupFee: setupFee.id,
      support: support.id,
      retired: retired.id,
    },
    subscriptions: { active: active.id, trialing: trialing.id, canceled: canceled.id, pastDue: pastDue.id },
    meteredItemIds: [active.itemIds[1]!, active.itemIds[2]!, pastDue.itemIds[0]!],
    invoices,
  };
}
