import type { Queryable } from '../../db/index.js';
import type { BillableItem, PriceTier } from '../pricing/index.js';
import type { ChangeCatalog, ChangeProduct, ItemSetEntry } from './item-set.js';
import type { ItemSetPlan } from './plan-item-set.js';

/**
 * The SQL of a subscription's item set: its items as billing prices them, what a change reads
 * besides them (changeCatalogColumns), and the CTEs that write a worked-out change.
 */

/** A billable item as the database gives it: rows give Dates, json_agg gives their text. */
export interface BillableItemRow {
  subscription_id: number;
  subscription_item_id: number;
  product_id: number;
  quantity: number;
  unit_price: string;
  usage_type: 'licensed' | 'metered';
  included_units: string;
  usage_limit: string | null;
  product_name: string;
  unit_label: string;
  currency: string;
  pricing_type: BillableItem['pricing_type'];
  pricing_model: BillableItem['pricing']['pricing_model'];
  pricing_scheme: BillableItem['pricing']['pricing_scheme'];
  pricing_mode: BillableItem['pricing']['pricing_mode'];
  tiers: PriceTier[];
  org_id: number;
  started_at: Date | string | null;
  removed_at: Date | string | null;
  base_period_start: Date | string | null;
  base_quantity: number | null;
  base_unit_price: string | null;
  base_included_units: string | null;
}

/**
 * The tiers of the product `p` (a products row the statement has) as a JSON array of PriceTier,
 * in ascending order; empty for a linear price. The one read of a product's tiers for billing:
 * items and the products a change adds carry them in the same shape. Numerics as text, exact.
 */
function productTiersSql(p: string): string {
  return `CASE WHEN ${p}.pricing_scheme = 'tiered' THEN (
            SELECT coalesce(json_agg(json_build_object('up_to', t.up_to::text, 'unit_price', t.unit_price::text,
                                                       'flat_fee', t.flat_fee::text) ORDER BY t.position), '[]')
              FROM product_price_tiers t WHERE t.org_id = ${p}.org_id AND t.product_id = ${p}.id)
          ELSE '[]'::json END`;
}

/**
 * The SELECT of billable items, `si`, under `where`: the items billed for the running period or
 * later, so an item removed by a change since the running period began is still there (with its
 * `removed_at`) until that period is invoiced. `subscription` names a subscriptions row the
 * statement already has (the items' own); without it the items' subscriptions are joined. Numerics
 * are cast to text, which is how pg gives them anyway, so that they stay exact in json_agg too.
 */
export function billableItemsSql(
  where: string,
  subscription?: string,
  /** SQL of the instant items removed by then are left out at (default: the running period's start). */
  removedAfter?: string,
): string {
  const s = subscription ?? 'item_s';
  return `SELECT si.subscription_id, si.id AS subscription_item_id, si.product_id, si.quantity,
            si.unit_price::text AS unit_price, si.usage_type, si.included_units::text AS included_units,
            si.usage_limit::text AS usage_limit, p.name AS product_name, p.unit_label, p.currency, p.pricing_type, p.pricing_model, p.pricing_scheme,
            p.pricing_mode, ${productTiersSql('p')} AS tiers, si.org_id, si.started_at, si.removed_at,
            si.base_period_start, si.base_quantity, si.base_unit_price::text AS base_unit_price,
            si.base_included_units::text AS base_included_units
       FROM subscription_items si
       JOIN products p ON p.org_id = si.org_id AND p.id = si.product_id
       ${subscription ? '' : 'JOIN subscriptions item_s ON item_s.org_id = si.org_id AND item_s.id = si.subscription_id'}
      WHERE (${where}) AND (si.removed_at IS NULL OR si.removed_at > ${removedAfter ?? `${s}.current_period_start`})`;
}

export function toBillableItem(row: BillableItemRow): BillableItem {
  const date = (value: Date | string | null) => (value === null ? null : new Date(value));
  return {
    subscription_item_id: row.subscription_item_id,
    product_id: row.product_id,
    product_name: row.product_name,
    unit_label: row.unit_label,
    currency: row.currency.trim(),
    pricing_type: row.pricing_type,
    usage_type: row.usage_type,
    quantity: row.quantity,
    unit_price: row.unit_price,
    included_units: row.included_units,
    usage_limit: row.usage_limit ?? null,
    pricing: {
      pricing_model: row.pricing_model,
      pricing_scheme: row.pricing_scheme,
      pricing_mode: row.pricing_mode,
      tiers: row.tiers,
    },
    started_at: date(row.started_at),
    removed_at: date(row.removed_at),
    base:
      row.base_period_start === null
        ? null
        : {
            period_start: date(row.base_period_start)!,
            quantity: row.base_quantity!,
            unit_price: row.base_unit_price!,
            included_units: row.base_included_units!,
          },
  };
}

/** Items of the given subscriptions with their products' prices and tiers, grouped by subscription. */
export async function loadBillableItems(
  tx: Queryable,
  orgIds: number[],
  subscriptionIds: number[],
): Promise<Map<number, BillableItem[]>> {
  const { rows } = await tx.query<BillableItemRow>(
    `${billableItemsSql('si.org_id = ANY($1::bigint[]) AND si.subscription_id = ANY($2::bigint[])')}
      ORDER BY si.subscription_id, si.id`,
    [orgIds, subscriptionIds],
  );
  const grouped = new Map<number, BillableItem[]>(subscriptionIds.map((id) => [id, []]));
  for (const row of rows) grouped.get(row.subscription_id)?.push(toBillableItem(row));
  return grouped;
}

/**
 * Items by id, removed ones too (their usage of an invoiced period may still come late): what a
 * late-usage line prices.
 */
export async function loadItemsById(
  tx: Queryable,
  orgIds: readonly number[],
  itemIds: readonly number[],
): Promise<Map<number, BillableItem>> {
  if (itemIds.length === 0) return new Map();
  const { rows } = await tx.query<BillableItemRow>(
    billableItemsSql(
      'si.org_id = ANY($1::bigint[]) AND si.id = ANY($2::bigint[])',
      undefined,
      "'-infinity'::timestamptz",
    ),
    [orgIds, itemIds],
  );
  return new Map(rows.map((row) => [row.subscription_item_id, toBillableItem(row)]));
}

/**
 * Items of the given subscriptions billed for a period beginning at `periodStart` (items removed
 * before it are left out): re-rating a draft of a period the subscription has moved past.
 */
export async function loadBillableItemsSince(
  tx: Queryable,
  orgIds: number[],
  subscriptionIds: number[],
  periodStart: Date,
): Promise<Map<number, BillableItem[]>> {
  const { rows } = await tx.query<BillableItemRow>(
    `${billableItemsSql('si.org_id = ANY($1::bigint[]) AND si.subscription_id = ANY($2::bigint[])', undefined, '$3::timestamptz')}
      ORDER BY si.subscription_id, si.id`,
    [orgIds, subscriptionIds, periodStart],
  );
  const grouped = new Map<number, BillableItem[]>(subscriptionIds.map((id) => [id, []]));
  for (const row of rows) grouped.get(row.subscription_id)?.push(toBillableItem(row));
  return grouped;
}

/** The product ids and item ids `entries` name: what changeCatalogColumns is given. */
export function namedIds(entries: readonly ItemSetEntry[]): { productIds: number[]; itemIds: number[] } {
  return {
    productIds: entries.flatMap((entry) => (entry.product_id === undefined ? [] : [entry.product_id])),
    itemIds: entries.flatMap((entry) => (entry.id === undefined ? [] : [entry.id])),
  };
}

/** The SQL expressions a change's read is given (changeCatalogColumns, changeReadColumns). */
export interface ChangeReadSql {
  /** The product ids the entries add (bigint[]), one per added entry. */
  productIds: string;
  /** The item ids the entries keep (bigint[]). */
  itemIds: string;
  /** The end of the period whose waiting proration lines count. */
  periodEnd: string;
  /**
   * Whether ids are drawn from the items' sequence for the items the change adds (boolean). Only a
   * change that will be written draws them: a preview gets provisional ids, -1, -2, ... in the
   * order of the entries, and leaves the sequence as it was (docs/decisions.md).
   */
  drawIds: string;
}

/**
 * The select-list columns that read a ChangeCatalog in the statement that reads the subscription
 * (`s`, a row of subscriptions): one round trip for the whole change, or for many. toChangeCatalog
 * turns the columns into a ChangeCatalog. An added item's id is drawn here (see `drawIds`), so that
 * the change's lines can name it before it is written.
 */
export function changeCatalogColumns(sql: ChangeReadSql): string {
  return `(SELECT coalesce(json_agg(p), '[]') FROM (
            SELECT p.id, p.name, p.unit_label, p.pricing_type, p.pricing_model, p.pricing_scheme, p.pricing_mode,
                   p.unit_price::text AS unit_price, p.currency, p.is_active, p.default_billing_period,
                   ${productTiersSql('p')} AS tiers
              FROM products p WHERE p.org_id = s.org_id AND p.id = ANY(${sql.productIds})) p) AS catalog_products,
          (SELECT coalesce(json_agg(json_build_array(o.id, o.subscription_id)), '[]') FROM subscription_items o
            WHERE o.org_id = s.org_id AND o.id = ANY(${sql.itemIds})
              AND (o.subscription_id <> s.id OR o.removed_at IS NULL)) AS catalog_item_owners,
          (SELECT coalesce(array_agg(CASE WHEN ${sql.drawIds} THEN nextval(pg_get_serial_sequence('subscription_items', 'id'))
                                          ELSE -n END ORDER BY n), '{}')
             FROM generate_series(1, cardinality(${sql.productIds})) n) AS catalog_new_item_ids,
          (SELECT json_build_object('sum', coalesce(sum(l.amount), 0)::text,
                                    'largest', coalesce(max(abs(l.amount)), 0)::text)
             FROM subscription_proration_lines l
            WHERE l.org_id = s.org_id AND l.subscription_id = s.id AND l.invoice_id IS NULL
              AND l.period_end <= ${sql.periodEnd}) AS catalog_pending_lines`;
}

export interface ChangeCatalogRow {
  catalog_products: ChangeProduct[];
  catalog_item_owners: [number, number][];
  catalog_new_item_ids: string[];
  catalog_pending_lines: { sum: string; largest: string };
}

/** The ChangeCatalog of a row read with changeCatalogColumns. */
export function toChangeCatalog(row: ChangeCatalogRow): ChangeCatalog {
  return {
    products: new Map(
      row.catalog_products.map((product) => [product.id, { ...product, currency: product.currency.trim() }]),
    ),
    itemOwners: new Map(row.catalog_item_owners),
    newItemIds: row.catalog_new_item_ids.map(Number),
    pendingLines: row.catalog_pending_lines,
  };
}

/**
 * Everything a change reads with the subscription `s`: its items (those removed within the
 * running period too) and its ChangeCatalog (changeCatalogColumns), in one select list.
 */
export function changeReadColumns(sql: ChangeReadSql): string {
  return `(SELECT coalesce(json_agg(i ORDER BY i.subscription_item_id), '[]')
             FROM (${billableItemsSql('si.org_id = s.org_id AND si.subscription_id = s.id', 's')}) i) AS items,
          ${changeCatalogColumns(sql)}`;
}

export interface ChangeReadRow extends ChangeCatalogRow {
  items: BillableItemRow[];
}

/** The items and the catalog of a row read with changeReadColumns. */
export function toChangeRead(row: ChangeReadRow): { items: BillableItem[]; catalog: ChangeCatalog } {
  return { items: row.items.map(toBillableItem), catalog: toChangeCatalog(row) };
}

/**
 * The CTEs that write plans (items updated and added, proration lines), for a statement of the
 * caller's (`WITH ${sql} ...`); each subscription's writes happen only when `onlyIf`, an SQL
 * condition on `x.subscription_id`, holds. `param` numbers a value. A plan with provisional ids
 * (a preview's) is never written.
 */
export function itemSetWriteCtes(
  changes: readonly {
    subscription: { id: number; org_id: number };
    plan: Pick<ItemSetPlan, 'updates' | 'added' | 'proration_lines'>;
  }[],
  param: (value: unknown) => string,
  onlyIf = 'true',
): string {
  const provisional = changes.find(({ plan }) => plan.added.some((item) => item.subscription_item_id <= 0));
  if (provisional) {
    throw new Error(
      `a plan of subscription ${provisional.subscription.id} with provisional item ids was written`,
    );
  }
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
      usage_limit: update.usage_limit ?? null,
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
      usage_limit: item.usage_limit ?? null,
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
        SET quantity = x.quantity, included_units = x.included_units, usage_limit = x.usage_limit,
            removed_at = x.removed_at,
            base_period_start = x.base_period_start, base_quantity = x.base_quantity,
            base_unit_price = x.base_unit_price, base_included_units = x.base_included_units, updated_at = now()
       FROM jsonb_to_recordset(${param(updates)}::jsonb) AS x(org_id bigint, subscription_id bigint, id bigint,
            quantity integer, included_units numeric, usage_limit numeric, removed_at timestamptz,
            base_period_start timestamptz,
            base_quantity integer, base_unit_price numeric, base_included_units numeric)
      WHERE si.org_id = x.org_id AND si.subscription_id = x.subscription_id AND si.id = x.id AND ${onlyIf}
   ), items_added AS (
     INSERT INTO subscription_items (id, org_id, subscription_id, product_id, quantity, unit_price, usage_type,
       included_units, usage_limit, started_at, base_period_start, base_quantity, base_unit_price,
       base_included_units)
     SELECT x.id, x.org_id, x.subscription_id, x.product_id, x.quantity, x.unit_price, x.usage_type,
            x.included_units, x.usage_limit, x.started_at, x.base_period_start, x.base_quantity, x.base_unit_price,
            x.base_included_units
       FROM jsonb_to_recordset(${param(added)}::jsonb) AS x(org_id bigint, subscription_id bigint, id bigint,
            product_id bigint, quantity integer, unit_price numeric, usage_type text, included_units numeric,
            usage_limit numeric, started_at timestamptz, base_period_start timestamptz, base_quantity integer, base_unit_price numeric,
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
