import type { Queryable } from '../db/index.js';
import { ApiError, type FieldError } from '../errors/index.js';
import { formatScaled, parseMoney, parseScaled } from '../money/index.js';
import type { BillingPeriod } from '../schemas/index.js';
import { loadBillableItems } from './billing-store.js';
import {
  fitsAnInvoice,
  fixedChargeProblems,
  MAX_STORED_MONEY,
  productPriceProblems,
} from './invoice-limits.js';
import type { BillableItem, ItemBase } from './invoice-lines.js';
import { priceQuantity } from './pricing.js';
import {
  blendIncludedUnits,
  type Period,
  type ProrationLine,
  proratedIncludedUnits,
  prorationLinesFor,
  toTheSecond,
} from './proration.js';

/**
 * Applying a new item set to a subscription (DESIGN §9.2): the one place where items are kept,
 * re-quantified, added and removed, for an immediate change and for a scheduled one the billing
 * run applies at the boundary. The caller holds the subscription's row lock.
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

interface ProductRow {
  id: number;
  name: string;
  pricing_type: 'one_time' | 'recurring' | 'usage';
  unit_price: string;
  currency: string;
  is_active: boolean;
  default_billing_period: BillingPeriod;
}

const UNIT_SCALE = 8;
const units = (text: string) => formatScaled(parseScaled(text, UNIT_SCALE, 'half-even'), UNIT_SCALE);

/**
 * Checks a requested set against the subscription's current items and the catalog: 404 for an
 * item or product this organization does not have, 422 naming each field otherwise.
 * `checkActive` false at a scheduled change's boundary: the set was valid when it was scheduled.
 */
export async function resolveItemSet(
  tx: Queryable,
  subscription: ChangingSubscription,
  current: readonly BillableItem[],
  entries: readonly ItemSetEntry[],
  options: { checkActive: boolean },
): Promise<ResolvedEntry[]> {
  const currentById = new Map(current.map((item) => [item.subscription_item_id, item]));
  const askedIds = entries.flatMap((entry) => (entry.id === undefined ? [] : [entry.id]));
  const foreign = askedIds.filter((id) => !currentById.has(id));
  const elsewhere = new Map<number, number>();
  if (foreign.length) {
    const { rows } = await tx.query<{ id: number; subscription_id: number }>(
      `SELECT id, subscription_id FROM subscription_items
        WHERE org_id = $1 AND id = ANY($2::bigint[]) AND (subscription_id <> $3 OR removed_at IS NULL)`,
      [subscription.org_id, foreign, subscription.id],
    );
    for (const row of rows) elsewhere.set(row.id, row.subscription_id);
    const unknown = foreign.find((id) => !elsewhere.has(id));
    if (unknown !== undefined) throw ApiError.notFound(`Subscription item ${unknown}`);
  }
  const productIds = entries.flatMap((entry) => (entry.product_id === undefined ? [] : [entry.product_id]));
  const products = new Map<number, ProductRow>();
  if (productIds.length) {
    const { rows } = await tx.query<ProductRow>(
      `SELECT id, name, pricing_type, unit_price, currency, is_active, default_billing_period
         FROM products WHERE org_id = $1 AND id = ANY($2::bigint[])`,
      [subscription.org_id, productIds],
    );
    for (const row of rows) products.set(row.id, { ...row, currency: row.currency.trim() });
    const unknown = productIds.find((id) => !products.has(id));
    if (unknown !== undefined) throw ApiError.notFound(`Product ${unknown}`);
  }

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
          `Item ${entry.id} belongs to subscription ${elsewhere.get(entry.id)}, not this one.`,
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
    if (product.currency !== subscription.currency.trim()) {
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

/**
 * Writes the change: items re-quantified, added (started at `at`) and removed (at `at`, kept until
 * their period is invoiced), the running period's base terms recorded, proration lines stored for
 * the next invoice. Then the door checks every subscription passes at creation
 * (fixedChargeProblems, and the running period with its lines must fit an invoice); a refusal
 * throws, and the caller's transaction rolls the writes back.
 */
export async function applyItemSet(
  tx: Queryable,
  subscription: ChangingSubscription,
  /** What loadBillableItems answers: the items, and those removed within the running period. */
  items: readonly BillableItem[],
  resolved: readonly ResolvedEntry[],
  context: { at: Date; mode: ChangeMode },
): Promise<AppliedItemSet> {
  const current = items.filter((item) => !item.removed_at);
  const at = toTheSecond(context.at);
  const period: Period = { start: subscription.current_period_start, end: subscription.current_period_end };
  const currency = subscription.currency.trim();
  const keepsBase = context.mode !== 'direct';
  const lines: ProrationLine[] = [];
  const updates: {
    id: number;
    quantity: number;
    included_units: string;
    removed_at: string | null;
    base: ItemBase | null;
  }[] = [];

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
  if (updates.length) {
    await tx.query(
      `UPDATE subscription_items si
          SET quantity = x.quantity, included_units = x.included_units, removed_at = x.removed_at,
              base_period_start = x.base_period_start, base_quantity = x.base_quantity,
              base_unit_price = x.base_unit_price, base_included_units = x.base_included_units, updated_at = now()
         FROM jsonb_to_recordset($3::jsonb) AS x(id bigint, quantity integer, included_units numeric,
              removed_at timestamptz, base_period_start timestamptz, base_quantity integer, base_unit_price numeric,
              base_included_units numeric)
        WHERE si.org_id = $1 AND si.subscription_id = $2 AND si.id = x.id`,
      [
        subscription.org_id,
        subscription.id,
        JSON.stringify(
          updates.map(({ base, ...update }) => ({
            ...update,
            base_period_start: base?.period_start.toISOString() ?? null,
            base_quantity: base?.quantity ?? null,
            base_unit_price: base?.unit_price ?? null,
            base_included_units: base?.included_units ?? null,
          })),
        ),
      ],
    );
  }

  const addedIds: number[] = [];
  for (const entry of resolved) {
    if (entry.id !== null) continue;
    // one at a time: an added item's id is needed for its lines, in the order of the entries
    const { rows } = await tx.query<{ id: number; usage_type: 'licensed' | 'metered' }>(
      `INSERT INTO subscription_items (org_id, subscription_id, product_id, quantity, unit_price, usage_type,
         included_units, started_at, base_period_start, base_quantity, base_unit_price, base_included_units)
       SELECT $1, $2, p.id, $4, p.unit_price, CASE WHEN p.pricing_type = 'usage' THEN 'metered' ELSE 'licensed' END,
              $5, $6, $7, CASE WHEN $7::timestamptz IS NULL THEN NULL ELSE 0 END,
              CASE WHEN $7::timestamptz IS NULL THEN NULL ELSE p.unit_price END,
              CASE WHEN $7::timestamptz IS NULL THEN NULL
                   WHEN p.pricing_type = 'usage' THEN $8::numeric ELSE 0 END
         FROM products p WHERE p.org_id = $1 AND p.id = $3
       RETURNING id, usage_type`,
      [
        subscription.org_id,
        subscription.id,
        entry.product_id,
        entry.quantity,
        entry.included_units,
        keepsBase ? at : null,
        keepsBase ? period.start : null,
        proratedIncludedUnits(entry.included_units, { start: at, end: period.end }, period),
      ],
    );
    addedIds.push(rows[0]!.id);
  }

  // without an added item, what was written is known: no need to read it back
  const loaded = addedIds.length
    ? ((await loadBillableItems(tx, [subscription.org_id], [subscription.id])).get(subscription.id) ?? [])
    : items.map((item) => {
        const update = updates.find((candidate) => candidate.id === item.subscription_item_id);
        return update
          ? {
              ...item,
              quantity: update.quantity,
              included_units: update.included_units,
              removed_at: update.removed_at ? new Date(update.removed_at) : null,
              base: update.base,
            }
          : item;
      });
  const live = new Map(
    loaded.filter((item) => !item.removed_at).map((item) => [item.subscription_item_id, item]),
  );
  let added = 0;
  const after = resolved.map((entry) => live.get(entry.id ?? addedIds[added++]!)!);
  for (const item of after) {
    if (item.started_at && (context.mode === 'prorate' || item.pricing_type === 'one_time')) {
      lines.push(...prorationLinesFor(undefined, item, { at, period, currency }));
    }
  }
  // checked before anything is stored: a line beyond NUMERIC(20, 8) must be a 422, not an overflow
  const problems = fixedChargeProblems(after);
  if (problems.length === 0 && keepsBase) {
    // the running period's invoice: the base of every item billed in it, plus all its lines
    const pending = await pendingProrationLines(tx, subscription.org_id, [subscription.id], period.end);
    let total = 0n;
    for (const item of loaded) {
      const billed = itemForPeriod(item, period);
      if (billed && billed.usage_type === 'licensed') {
        total += parseMoney(
          priceQuantity({ ...billed.pricing, unit_price: billed.unit_price }, String(billed.quantity)).amount,
        );
      }
    }
    for (const line of [...(pending.get(subscription.id) ?? []), ...lines]) {
      const amount = parseMoney(line.amount);
      total += amount;
      if (!fitsAnInvoice(amount < 0n ? -amount : amount)) total = MAX_STORED_MONEY + 1n;
    }
    if (!fitsAnInvoice(total)) {
      problems.push({
        field: 'items',
        message: 'The running period with this change is more than an invoice can hold with the highest tax.',
        code: 'out_of_range',
      });
    }
  }
  if (problems.length) throw ApiError.validation(problems);
  await insertProrationLines(tx, subscription, lines);
  return { before: [...current], after, proration_lines: lines, effective_at: at };
}

/**
 * The item as the invoice of `period` bills it, or undefined when that invoice does not bill it:
 * removed before the period, added after it, or a licensed item added within it (its charge line
 * bills it). A change within the period bills the terms the period began with.
 */
export function itemForPeriod(item: BillableItem, period: Period): BillableItem | undefined {
  if (item.removed_at && item.removed_at <= period.start) return undefined;
  if (item.started_at && item.started_at >= period.end) return undefined;
  const base =
    item.base && item.base.period_start.getTime() === period.start.getTime() ? item.base : undefined;
  if (!base) return item;
  if (
    item.usage_type === 'licensed' &&
    base.quantity === 0 &&
    item.started_at &&
    item.started_at > period.start
  ) {
    return undefined;
  }
  return {
    ...item,
    quantity: base.quantity,
    unit_price: base.unit_price,
    included_units: base.included_units,
  };
}

/** The part of `period` a metered item's usage counts for: from its start to its removal. */
export function usageWindow(item: BillableItem, period: Period): Period {
  return {
    start: item.started_at && item.started_at > period.start ? item.started_at : period.start,
    end: item.removed_at && item.removed_at < period.end ? item.removed_at : period.end,
  };
}

async function insertProrationLines(
  tx: Queryable,
  subscription: { id: number; org_id: number },
  lines: readonly ProrationLine[],
): Promise<void> {
  if (lines.length === 0) return;
  await tx.query(
    `INSERT INTO subscription_proration_lines (org_id, subscription_id, subscription_item_id, product_id, description,
       quantity, unit_price, amount, period_start, period_end)
     SELECT $1, $2, subscription_item_id, product_id, description, quantity, unit_price, amount, period_start, period_end
       FROM jsonb_to_recordset($3::jsonb) AS x(subscription_item_id bigint, product_id bigint, description text,
            quantity numeric, unit_price numeric, amount numeric, period_start timestamptz, period_end timestamptz)`,
    [subscription.org_id, subscription.id, JSON.stringify(lines)],
  );
}

export interface PendingProrationLine extends ProrationLine {
  id: number;
}

/**
 * Proration lines not invoiced yet whose period ends by `periodEnd`, per subscription, in the
 * order they were made: what the invoice of the period ending then carries.
 */
export async function pendingProrationLines(
  tx: Queryable,
  orgId: number | readonly number[],
  subscriptionIds: readonly number[],
  periodEnd: Date,
): Promise<Map<number, PendingProrationLine[]>> {
  const grouped = new Map<number, PendingProrationLine[]>();
  if (subscriptionIds.length === 0) return grouped;
  const { rows } = await tx.query<
    Omit<PendingProrationLine, 'period_start' | 'period_end'> & {
      subscription_id: number;
      period_start: Date;
      period_end: Date;
    }
  >(
    `SELECT id, subscription_id, subscription_item_id, product_id, description, quantity, unit_price, amount,
            period_start, period_end
       FROM subscription_proration_lines
      WHERE org_id = ANY($1::bigint[]) AND subscription_id = ANY($2::bigint[]) AND invoice_id IS NULL
        AND period_end <= $3
      ORDER BY subscription_id, id`,
    [Array.isArray(orgId) ? orgId : [orgId], subscriptionIds, periodEnd],
  );
  for (const { subscription_id, period_start, period_end, ...line } of rows) {
    const list = grouped.get(subscription_id) ?? [];
    list.push({ ...line, period_start: period_start.toISOString(), period_end: period_end.toISOString() });
    grouped.set(subscription_id, list);
  }
  return grouped;
}

/**
 * Usage totals of metered items over `period`, each over the part of it the item was on the
 * subscription (usageWindow): one aggregation call per distinct window, usually one.
 */
export async function windowedUsageTotals(
  aggregator: {
    totals(orgId: number, itemIds: number[], from: Date, to: Date): Promise<Map<number, string>>;
  },
  orgId: number,
  items: readonly BillableItem[],
  period: Period,
): Promise<Map<number, string>> {
  const windows = new Map<string, { window: Period; ids: number[] }>();
  for (const item of items) {
    if (item.usage_type !== 'metered' || !itemForPeriod(item, period)) continue;
    const window = usageWindow(item, period);
    const key = `${window.start.toISOString()}|${window.end.toISOString()}`;
    const group = windows.get(key) ?? { window, ids: [] };
    group.ids.push(item.subscription_item_id);
    windows.set(key, group);
  }
  const totals = new Map<number, string>();
  for (const { window, ids } of windows.values()) {
    for (const [id, total] of await aggregator.totals(orgId, ids, window.start, window.end))
      totals.set(id, total);
  }
  return totals;
}
