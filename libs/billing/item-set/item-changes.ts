import type { Queryable } from '../../db/index.js';
import { ApiError, type FieldError } from '../../errors/index.js';
import { formatScaled, isBillableCurrency, parseMoney, parseScaled } from '../../money/index.js';
import type { BillingPeriod } from '../../schemas/index.js';
import {
  assertBillableCurrency,
  composing,
  fitsAnInvoice,
  fixedChargeProblems,
  itemForPeriod,
  MAX_STORED_MONEY,
  productPriceProblems,
} from '../invoices/index.js';
import type { BillableItem, ItemBase } from '../pricing/index.js';
import {
  blendIncludedUnits,
  type Period,
  type PriceTier,
  type ProrationLine,
  priceQuantity,
  proratedIncludedUnits,
  prorationLinesFor,
  toTheSecond,
} from '../pricing/index.js';

/**
 * Applying a new item set to a subscription (DESIGN §9.2): the one place where items are kept,
 * re-quantified, added and removed, for an immediate change and for a scheduled one the billing
 * run applies at the boundary. Worked out in memory from what one statement read (planItemSet),
 * written by one statement (itemSetWriteCtes): a change is two round trips to Postgres.
 */

/** One entry of a change's `items`: `id` keeps an item, `product_id` adds one. */
export interface ItemSetEntry {
  id?: number | undefined;
  product_id?: number | undefined;
  quantity?: number | undefined;
  included_units?: string | undefined;
}

/** An entry checked and completed: what a pending change stores and shows. */
export interface ResolvedEntry {
  /** null: an item to add. */
  id: number | null;
  product_id: number;
  quantity: number;
  included_units: string;
}

export interface ChangingSubscription {
  id: number;
  org_id: number;
  currency: string;
  billing_period: BillingPeriod;
  current_period_start: Date;
  current_period_end: Date;
}

/**
 * How the running period is billed after the change:
 * - `prorate`: its invoice keeps each item's terms from the period start, plus a credit and a
 *   charge line for the rest of the period (metered items: usage and included units by time);
 * - `none`: the same without money lines (the new terms bill from the next period on);
 * - `direct`: nothing of the period is billed at the old terms (a trial, a period not begun, or
 *   a scheduled change at its boundary): the new set simply replaces the old.
 */
export type ChangeMode = 'prorate' | 'none' | 'direct';

/** A product a change adds, as the change reads it. */
export interface ChangeProduct {
  id: number;
  name: string;
  unit_label: string;
  pricing_type: 'one_time' | 'recurring' | 'usage';
  pricing_model: BillableItem['pricing']['pricing_model'];
  pricing_scheme: BillableItem['pricing']['pricing_scheme'];
  pricing_mode: BillableItem['pricing']['pricing_mode'];
  unit_price: string;
  currency: string;
  is_active: boolean;
  default_billing_period: BillingPeriod;
  tiers: PriceTier[];
}

/** What a change reads besides the subscription and its items (changeCatalogColumns). */
export interface ChangeCatalog {
  /** The products the entries add, by id. */
  products: ReadonlyMap<number, ChangeProduct>;
  /** The subscription of each item id the entries name, but not this subscription's removed items. */
  itemOwners: ReadonlyMap<number, number>;
  /** Ids for the items the entries add, one per added entry in their order. */
  newItemIds: readonly number[];
  /** The proration lines already waiting for the running period's invoice: their sum, and the largest. */
  pendingLines: { sum: string; largest: string };
}

const UNIT_SCALE = 8;
const units = (text: string) => formatScaled(parseScaled(text, UNIT_SCALE, 'half-even'), UNIT_SCALE);

/** The product ids and item ids `entries` name: what changeCatalogColumns is given. */
export function namedIds(entries: readonly ItemSetEntry[]): { productIds: number[]; itemIds: number[] } {
  return {
    productIds: entries.flatMap((entry) => (entry.product_id === undefined ? [] : [entry.product_id])),
    itemIds: entries.flatMap((entry) => (entry.id === undefined ? [] : [entry.id])),
  };
}

/**
 * The select-list columns that read a ChangeCatalog in the statement that reads the subscription
 * (`s`, a row of subscriptions): one round trip for the whole change, or for many. The arguments
 * are SQL expressions: the product ids and item ids the entries name (bigint[]), and the end of the
 * period whose waiting proration lines count. toChangeCatalog turns the columns into a
 * ChangeCatalog. An added item's id is drawn from the items' sequence here, so that the change's
 * lines can name it before it is written.
 */
export function changeCatalogColumns(sql: {
  productIds: string;
  itemIds: string;
  periodEnd: string;
}): string {
  return `(SELECT coalesce(json_agg(p), '[]') FROM (
            SELECT p.id, p.name, p.unit_label, p.pricing_type, p.pricing_model, p.pricing_scheme, p.pricing_mode,
                   p.unit_price::text AS unit_price, p.currency, p.is_active, p.default_billing_period
              FROM products p WHERE p.org_id = s.org_id AND p.id = ANY(${sql.productIds})) p) AS catalog_products,
          (SELECT coalesce(json_agg(t ORDER BY t.product_id, t.position), '[]') FROM (
            SELECT t.product_id, t.position, t.up_to::text AS up_to, t.unit_price::text AS unit_price,
                   t.flat_fee::text AS flat_fee
              FROM product_price_tiers t
             WHERE t.org_id = s.org_id
               AND t.product_id IN (SELECT product_id FROM subscription_items i
                                     WHERE i.org_id = s.org_id AND i.subscription_id = s.id
                                    UNION ALL SELECT unnest(${sql.productIds}))) t) AS catalog_tiers,
          (SELECT coalesce(json_agg(json_build_array(o.id, o.subscription_id)), '[]') FROM subscription_items o
            WHERE o.org_id = s.org_id AND o.id = ANY(${sql.itemIds})
              AND (o.subscription_id <> s.id OR o.removed_at IS NULL)) AS catalog_item_owners,
          (SELECT coalesce(array_agg(nextval(pg_get_serial_sequence('subscription_items', 'id'))), '{}')
             FROM generate_series(1, cardinality(${sql.productIds}))) AS catalog_new_item_ids,
          (SELECT json_build_object('sum', coalesce(sum(l.amount), 0)::text,
                                    'largest', coalesce(max(abs(l.amount)), 0)::text)
             FROM subscription_proration_lines l
            WHERE l.org_id = s.org_id AND l.subscription_id = s.id AND l.invoice_id IS NULL
              AND l.period_end <= ${sql.periodEnd}) AS catalog_pending_lines`;
}

export interface ChangeCatalogRow {
  catalog_products: Omit<ChangeProduct, 'tiers'>[];
  catalog_tiers: (PriceTier & { product_id: number })[];
  catalog_item_owners: [number, number][];
  catalog_new_item_ids: string[];
  catalog_pending_lines: { sum: string; largest: string };
}

/** The ChangeCatalog of a row read with changeCatalogColumns, and the tiers of every product read. */
export function toChangeCatalog(row: ChangeCatalogRow): {
  catalog: ChangeCatalog;
  tiers: Map<number, PriceTier[]>;
} {
  const tiers = new Map<number, PriceTier[]>();
  for (const { product_id, up_to, unit_price, flat_fee } of row.catalog_tiers) {
    const list = tiers.get(product_id) ?? [];
    list.push({ up_to, unit_price, flat_fee });
    tiers.set(product_id, list);
  }
  const products = new Map(
    row.catalog_products.map((product) => [
      product.id,
      { ...product, currency: product.currency.trim(), tiers: tiers.get(product.id) ?? [] },
    ]),
  );
  return {
    catalog: {
      products,
      itemOwners: new Map(row.catalog_item_owners),
      newItemIds: row.catalog_new_item_ids.map(Number),
      pendingLines: row.catalog_pending_lines,
    },
    tiers,
  };
}

/**
 * Checks a requested set against the subscription's current items and the catalog: 404 for an
 * item or product this organization does not have, 422 naming each field otherwise.
 * `checkActive` false at a scheduled change's boundary: the set was valid when it was scheduled.
 */
export function resolveItemSet(
  subscription: ChangingSubscription,
  current: readonly BillableItem[],
  entries: readonly ItemSetEntry[],
  catalog: ChangeCatalog,
  options: { checkActive: boolean },
): ResolvedEntry[] {
  const currentById = new Map(current.map((item) => [item.subscription_item_id, item]));
  const { productIds, itemIds } = namedIds(entries);
  const unknownItem = itemIds.find((id) => !currentById.has(id) && !catalog.itemOwners.has(id));
  if (unknownItem !== undefined) throw ApiError.notFound(`Subscription item ${unknownItem}`);
  const unknownProduct = productIds.find((id) => !catalog.products.has(id));
  if (unknownProduct !== undefined) throw ApiError.notFound(`Product ${unknownProduct}`);
  const products = catalog.products;

  const problems: FieldError[] = [];
  const problem = (field: string, message: string, code = 'invalid_value') =>
    problems.push({ field, message, code });
  const resolved = entries.map((entry, index): ResolvedEntry | undefined => {
    const at = `items.${index}`;
    if (entry.id !== undefined) {
      const item = currentById.get(entry.id);
      if (!item) {
        problem(
          `${at}.id`,
          `Item ${entry.id} belongs to subscription ${catalog.itemOwners.get(entry.id)}, not this one.`,
        );
        return undefined;
      }
      const metered = item.usage_type === 'metered';
      if (metered && entry.quantity !== undefined) {
        problem(
          `${at}.quantity`,
          `Item ${item.subscription_item_id} is usage-priced: its usage is its quantity.`,
        );
      }
      if (!metered && entry.included_units !== undefined) {
        problem(`${at}.included_units`, 'Only metered items (usage-priced products) have included units.');
      }
      return {
        id: item.subscription_item_id,
        product_id: item.product_id,
        quantity: metered ? item.quantity : (entry.quantity ?? item.quantity),
        included_units: units(metered ? (entry.included_units ?? item.included_units) : '0'),
      };
    }
    const product = products.get(entry.product_id!)!;
    const metered = product.pricing_type === 'usage';
    if (options.checkActive && !product.is_active) {
      problem(`${at}.product_id`, `Product ${product.id} is not active.`);
    }
    if (!isBillableCurrency(product.currency)) {
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced in ${product.currency}, a currency that cannot be billed.`,
      );
    } else if (product.currency !== subscription.currency.trim()) {
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced in ${product.currency}; this subscription is billed in ${subscription.currency.trim()}.`,
      );
    }
    if (
      product.pricing_type !== 'one_time' &&
      product.default_billing_period !== subscription.billing_period
    ) {
      problem(
        `${at}.product_id`,
        `Product ${product.id} is priced ${product.default_billing_period}; this subscription is billed ${subscription.billing_period}.`,
      );
    }
    if (metered && entry.quantity !== undefined) {
      problem(`${at}.quantity`, `Product ${product.id} is usage-priced: its usage is its quantity.`);
    }
    if (!metered && entry.included_units !== undefined) {
      problem(`${at}.included_units`, 'Only metered items (usage-priced products) have included units.');
    }
    if (options.checkActive) {
      for (const priceProblem of productPriceProblems({ unit_price: product.unit_price })) {
        problem(`${at}.product_id`, priceProblem.message, priceProblem.code);
      }
    }
    return {
      id: null,
      product_id: product.id,
      quantity: metered ? 1 : (entry.quantity ?? 1),
      included_units: units(metered ? (entry.included_units ?? '0') : '0'),
    };
  });
  const periodic = resolved.filter((entry) => {
    if (!entry) return true;
    const type =
      entry.id === null
        ? products.get(entry.product_id)!.pricing_type
        : currentById.get(entry.id)!.pricing_type;
    return type !== 'one_time';
  });
  if (periodic.length === 0) {
    problem(
      'items',
      'A subscription needs at least one recurring or usage item; one-time items alone are a one-off charge.',
    );
  }
  if (problems.length) throw ApiError.validation(problems);
  return resolved as ResolvedEntry[];
}

export interface AppliedItemSet {
  before: BillableItem[];
  /** The items after the change, in the order of the entries. */
  after: BillableItem[];
  proration_lines: ProrationLine[];
  effective_at: Date;
}

interface ItemUpdate {
  id: number;
  quantity: number;
  included_units: string;
  removed_at: string | null;
  base: ItemBase | null;
}

/** A change worked out, not written yet: what it answers, and what writeItemSetSql stores. */
export interface ItemSetPlan extends AppliedItemSet {
  updates: ItemUpdate[];
  added: BillableItem[];
}

/**
 * Works out a change (nothing is written): items re-quantified, added (started at `at`) and removed
 * (at `at`, kept until their period is invoiced), the running period's base terms recorded,
 * proration lines for the next invoice. Then the door checks every subscription passes at creation
 * (fixedChargeProblems, and the running period with its lines must fit an invoice): a refusal
 * throws. Pure, so a preview is the very plan a change writes.
 */
export function planItemSet(
  subscription: ChangingSubscription,
  /** The items and those removed within the running period (billableItemsSql). */
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  catalog: ChangeCatalog,
  context: { at: Date; mode: ChangeMode },
): ItemSetPlan {
  const currency = subscription.currency.trim();
  assertBillableCurrency(currency);
  return composing(() => plan(subscription, items, resolved, catalog, { ...context, currency }));
}

function plan(
  subscription: ChangingSubscription,
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  catalog: ChangeCatalog,
  context: { at: Date; mode: ChangeMode; currency: string },
): ItemSetPlan {
  const current = items.filter((item) => !item.removed_at);
  const at = toTheSecond(context.at);
  const period: Period = { start: subscription.current_period_start, end: subscription.current_period_end };
  const { currency } = context;
  const keepsBase = context.mode !== 'direct';
  const lines: ProrationLine[] = [];
  const updates: ItemUpdate[] = [];

  const baseOf = (item: BillableItem): ItemBase | null => {
    const running =
      item.base && item.base.period_start.getTime() === period.start.getTime() ? item.base : null;
    if (!keepsBase) return running;
    return (
      running ?? {
        period_start: period.start,
        quantity: item.quantity,
        unit_price: item.unit_price,
        included_units: item.included_units,
      }
    );
  };

  for (const item of current) {
    const entry = resolved.find((candidate) => candidate.id === item.subscription_item_id);
    const after = entry
      ? { ...item, quantity: entry.quantity, included_units: entry.included_units }
      : undefined;
    if (
      after &&
      after.quantity === item.quantity &&
      units(after.included_units) === units(item.included_units)
    ) {
      continue;
    }
    let base = baseOf(item);
    if (keepsBase && base && item.usage_type === 'metered') {
      // metered allowances follow time whatever the proration: usage is counted by time too
      base = {
        ...base,
        included_units: blendIncludedUnits(
          base.included_units,
          { before: item.included_units, after: after?.included_units ?? '0', at },
          period,
        ),
      };
    }
    if (context.mode === 'prorate') lines.push(...prorationLinesFor(item, after, { at, period, currency }));
    updates.push({
      id: item.subscription_item_id,
      quantity: after?.quantity ?? item.quantity,
      included_units: after?.included_units ?? item.included_units,
      removed_at: after ? null : at.toISOString(),
      base,
    });
  }

  const newItemIds = [...catalog.newItemIds];
  const added = resolved.flatMap((entry): BillableItem[] => {
    if (entry.id !== null) return [];
    const product = catalog.products.get(entry.product_id)!;
    const metered = product.pricing_type === 'usage';
    return [
      {
        subscription_item_id: newItemIds.shift()!,
        product_id: product.id,
        product_name: product.name,
        unit_label: product.unit_label,
        currency: product.currency,
        pricing_type: product.pricing_type,
        usage_type: metered ? 'metered' : 'licensed',
        quantity: entry.quantity,
        unit_price: product.unit_price,
        included_units: units(entry.included_units),
        pricing: {
          pricing_model: product.pricing_model,
          pricing_scheme: product.pricing_scheme,
          pricing_mode: product.pricing_mode,
          tiers: product.tiers,
        },
        started_at: keepsBase ? at : null,
        removed_at: null,
        base: keepsBase
          ? {
              period_start: period.start,
              quantity: 0,
              unit_price: product.unit_price,
              included_units: metered
                ? proratedIncludedUnits(entry.included_units, { start: at, end: period.end }, period)
                : units('0'),
            }
          : null,
      },
    ];
  });

  const written = itemsAfterPlan(items, { updates, added });
  const live = new Map(
    written.filter((item) => !item.removed_at).map((item) => [item.subscription_item_id, item]),
  );
  const addedIds = added.map((item) => item.subscription_item_id);
  const after = resolved.map((entry) => live.get(entry.id ?? addedIds.shift()!)!);
  // What a change charges comes from what this change did: only the items it adds get a charge
  // for the rest of the period. An item an earlier change added keeps its `started_at` in the
  // period; charging it again here would bill it once per later change.
  for (const item of added) {
    if (item.started_at && (context.mode === 'prorate' || item.pricing_type === 'one_time')) {
      lines.push(...prorationLinesFor(undefined, item, { at, period, currency }));
    }
  }
  // checked before anything is stored: a line beyond NUMERIC(20, 8) must be a 422, not an overflow
  const problems = fixedChargeProblems(after);
  if (problems.length === 0 && keepsBase) {
    // the running period's invoice: the base of every item billed in it, plus all its lines
    let total = 0n;
    for (const item of written) {
      const billed = itemForPeriod(item, period);
      if (billed && billed.usage_type === 'licensed') {
        total += parseMoney(
          priceQuantity({ ...billed.pricing, unit_price: billed.unit_price }, String(billed.quantity)).amount,
        );
      }
    }
    const amounts = [catalog.pendingLines.sum, ...lines.map((line) => line.amount)].map(parseMoney);
    const largest = [parseMoney(catalog.pendingLines.largest), ...amounts.map((a) => (a < 0n ? -a : a))];
    total += amounts.reduce((sum, amount) => sum + amount, 0n);
    if (largest.some((amount) => !fitsAnInvoice(amount))) total = MAX_STORED_MONEY + 1n;
    if (!fitsAnInvoice(total)) {
      problems.push({
        field: 'items',
        message: 'The running period with this change is more than an invoice can hold with the highest tax.',
        code: 'out_of_range',
      });
    }
  }
  if (problems.length) throw ApiError.validation(problems);
  return { before: [...current], after, proration_lines: lines, effective_at: at, updates, added };
}

/** The subscription's items as a plan leaves them: updated in place, the added ones last. */
function itemsAfterPlan(
  items: readonly BillableItem[],
  plan: Pick<ItemSetPlan, 'updates' | 'added'>,
): BillableItem[] {
  return [
    ...items.map((item) => {
      const update = plan.updates.find((candidate) => candidate.id === item.subscription_item_id);
      return update
        ? {
            ...item,
            quantity: update.quantity,
            included_units: update.included_units,
            removed_at: update.removed_at ? new Date(update.removed_at) : null,
            base: update.base,
          }
        : item;
    }),
    ...plan.added,
  ];
}

const NOTHING_NAMED: ChangeCatalog = {
  products: new Map(),
  itemOwners: new Map(),
  newItemIds: [],
  pendingLines: { sum: '0', largest: '0' },
};

/**
 * The items of a subscription that stops at `at` (an immediate cancel) as its running period's
 * final invoice bills them: every item ends then, exactly as a change removing them all would end
 * it. Licensed items keep the terms the period began with and, with `prorate`, get a credit for
 * the rest of the period; metered items count usage until `at`, their included units by time.
 * Pure: nothing is written, the subscription keeps its items.
 */
export function endItemsAt(
  subscription: ChangingSubscription,
  items: readonly BillableItem[],
  context: { at: Date; mode: 'prorate' | 'none' },
): { items: BillableItem[]; lines: ProrationLine[] } {
  const plan = planItemSet(subscription, items, [], NOTHING_NAMED, context);
  return { items: itemsAfterPlan(items, plan), lines: plan.proration_lines };
}

/**
 * The CTEs that write plans (items updated and added, proration lines), for a statement of the
 * caller's (`WITH ${sql} ...`); each subscription's writes happen only when `onlyIf`, an SQL
 * condition on `x.subscription_id`, holds. `param` numbers a value.
 */
export function itemSetWriteCtes(
  changes: readonly {
    subscription: { id: number; org_id: number };
    plan: Pick<ItemSetPlan, 'updates' | 'added' | 'proration_lines'>;
  }[],
  param: (value: unknown) => string,
  onlyIf = 'true',
): string {
  const records = <T>(
    pick: (plan: (typeof changes)[number]['plan']) => readonly T[],
    shape: (row: T) => object,
  ) =>
    JSON.stringify(
      changes.flatMap(({ subscription, plan }) =>
        pick(plan).map((row) => ({
          org_id: subscription.org_id,
          subscription_id: subscription.id,
          ...shape(row),
        })),
      ),
    );
  const updates = records(
    (plan) => plan.updates,
    ({ base, ...update }) => ({
      ...update,
      base_period_start: base?.period_start.toISOString() ?? null,
      base_quantity: base?.quantity ?? null,
      base_unit_price: base?.unit_price ?? null,
      base_included_units: base?.included_units ?? null,
    }),
  );
  const added = records(
    (plan) => plan.added,
    (item) => ({
      id: item.subscription_item_id,
      product_id: item.product_id,
      quantity: item.quantity,
      unit_price: item.unit_price,
      usage_type: item.usage_type,
      included_units: item.included_units,
      started_at: item.started_at?.toISOString() ?? null,
      base_period_start: item.base?.period_start.toISOString() ?? null,
      base_quantity: item.base?.quantity ?? null,
      base_unit_price: item.base?.unit_price ?? null,
      base_included_units: item.base?.included_units ?? null,
    }),
  );
  const lines = records(
    (plan) => plan.proration_lines,
    (line) => line,
  );
  return `items_updated AS (
     UPDATE subscription_items si
        SET quantity = x.quantity, included_units = x.included_units, removed_at = x.removed_at,
            base_period_start = x.base_period_start, base_quantity = x.base_quantity,
            base_unit_price = x.base_unit_price, base_included_units = x.base_included_units, updated_at = now()
       FROM jsonb_to_recordset(${param(updates)}::jsonb) AS x(org_id bigint, subscription_id bigint, id bigint,
            quantity integer, included_units numeric, removed_at timestamptz, base_period_start timestamptz,
            base_quantity integer, base_unit_price numeric, base_included_units numeric)
      WHERE si.org_id = x.org_id AND si.subscription_id = x.subscription_id AND si.id = x.id AND ${onlyIf}
   ), items_added AS (
     INSERT INTO subscription_items (id, org_id, subscription_id, product_id, quantity, unit_price, usage_type,
       included_units, started_at, base_period_start, base_quantity, base_unit_price, base_included_units)
     SELECT x.id, x.org_id, x.subscription_id, x.product_id, x.quantity, x.unit_price, x.usage_type,
            x.included_units, x.started_at, x.base_period_start, x.base_quantity, x.base_unit_price,
            x.base_included_units
       FROM jsonb_to_recordset(${param(added)}::jsonb) AS x(org_id bigint, subscription_id bigint, id bigint,
            product_id bigint, quantity integer, unit_price numeric, usage_type text, included_units numeric,
            started_at timestamptz, base_period_start timestamptz, base_quantity integer, base_unit_price numeric,
            base_included_units numeric)
      WHERE ${onlyIf}
   ), proration_lines_added AS (
     INSERT INTO subscription_proration_lines (org_id, subscription_id, subscription_item_id, product_id,
       description, quantity, unit_price, amount, period_start, period_end)
     SELECT x.org_id, x.subscription_id, x.subscription_item_id, x.product_id, x.description, x.quantity,
            x.unit_price, x.amount, x.period_start, x.period_end
       FROM jsonb_to_recordset(${param(lines)}::jsonb) AS x(org_id bigint, subscription_id bigint,
            subscription_item_id bigint, product_id bigint, description text, quantity numeric, unit_price numeric,
            amount numeric, period_start timestamptz, period_end timestamptz)
      WHERE ${onlyIf}
   )`;
}

/**
 * Applies a set at a scheduled change's boundary, in the billing run's transaction (which holds the
 * subscription's row): reads the catalog, works the change out, writes it.
 */
export async function applyItemSet(
  tx: Queryable,
  subscription: ChangingSubscription,
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  context: { at: Date; mode: ChangeMode },
): Promise<AppliedItemSet> {
  const values: unknown[] = [];
  const param = (value: unknown) => `$${values.push(value)}`;
  const productIds = resolved.flatMap((entry) => (entry.id === null ? [entry.product_id] : []));
  const columns = changeCatalogColumns({
    productIds: `${param(productIds)}::bigint[]`,
    itemIds: `'{}'::bigint[]`,
    periodEnd: `${param(subscription.current_period_end)}::timestamptz`,
  });
  const { rows } = await tx.query<ChangeCatalogRow>(
    `SELECT ${columns} FROM subscriptions s WHERE s.org_id = ${param(subscription.org_id)} AND s.id = ${param(subscription.id)}`,
    values,
  );
  const plan = planItemSet(subscription, items, resolved, toChangeCatalog(rows[0]!).catalog, context);
  const writes: unknown[] = [];
  const ctes = itemSetWriteCtes([{ subscription, plan }], (value) => `$${writes.push(value)}`);
  await tx.query(`WITH ${ctes} SELECT 1`, writes);
  return plan;
}
