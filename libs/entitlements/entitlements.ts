import { Batcher } from '../batching/index.js';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { formatScaled, parseScaled } from '../money/index.js';
import { type BillingPeriod, type Entitlement, parseIntegerId } from '../schemas/index.js';
import { type CountedBucket, type CounterPeriod, periodAt, type UsageCounter } from '../usage/index.js';

/**
 * May this customer use this product now (docs/decisions.md, "Where the entitlement counter lives
 * and why"): a read model comparing an item's `usage_limit` (the item set's) with what usage
 * counted in its running period (the counter ingest keeps, read your writes). One Postgres query
 * for the customer's items and one counter read (one Redis round trip) per check, sent together:
 * the counters read are those of the items the previous check of the same customer (and product)
 * found, in their periods at this check's instant; the query's answer decides, and when its items
 * or periods differ (a change, a new subscription, a first check) the right counters are read
 * after it. So a check waits for one round trip, not two, and is never answered from a stale
 * guess (docs/decisions.md, "The entitlement check's round trips").
 */

const SCALE = 8;
/** The statuses whose items may be used; a canceled subscription's items stay listed without access. */
const WITH_ACCESS = new Set(['active', 'trialing']);
/** Guesses kept per counter (per process and store); past this many, the one set longest ago goes. */
const MAX_GUESSES = 100_000;

/**
 * Per (organization, customer, product or every product): the rows the last check read and their
 * metered periods, from which the next check derives which counters to read while its own query
 * runs. Only a guess: the query's rows decide every answer.
 */
const guessesByCounter = new WeakMap<UsageCounter, Map<string, Guess>>();

/** What the last check of a customer (and product) read: its items and their metered periods then. */
interface Guess {
  items: ItemRow[];
  metered: CounterPeriod[];
}

function guessesOf(counter: UsageCounter): Map<string, Guess> {
  let guesses = guessesByCounter.get(counter);
  if (!guesses) {
    guesses = new Map();
    guessesByCounter.set(counter, guesses);
  }
  return guesses;
}

interface ItemRow {
  /** The position of the check in its batch (1-based). */
  n?: number;
  customer_id: number;
  subscription_item_id: number | null;
  product_id: number | null;
  usage_type: 'licensed' | 'metered' | null;
  usage_limit: string | null;
  status: string | null;
  /**
   * The subscription's instants as epoch milliseconds, floored to the millisecond as a parsed Date
   * would be: a check reads them as numbers, with no Date parsing per row.
   */
  start_ms: number | null;
  billing_period: BillingPeriod | null;
  billing_anchor_day: number | null;
  current_period_start_ms: number | null;
  current_period_end_ms: number | null;
}

/**
 * The request a check answers, counted against its organization's hourly bucket in the same store
 * call as the counter read (docs/decisions.md, "The entitlement check's round trips"), as the api
 * counts every request before its handler (libs/rate-limit's PlannedCount).
 */
export interface RequestCount {
  bucket: CountedBucket;
  /** Takes the store's count (this request included when allowed); throws to refuse the check. */
  decide(counted: { count: number; allowed: boolean }): void;
}

export interface CheckOptions {
  now?: Date;
  /** Counted in the counter read's call; `decide` runs before the check answers or fails. */
  count?: RequestCount | undefined;
}

/** GET /customers/{id}/entitlements: every current item of the customer's subscriptions, by item id. */
export async function listEntitlements(
  db: Queryable,
  counter: UsageCounter,
  orgId: number,
  customerId: number | string,
  options: CheckOptions = {},
): Promise<Entitlement[]> {
  return entitlementsOf(db, counter, orgId, customerId, undefined, options);
}

/**
 * GET /customers/{id}/entitlements/{product_id}: 404 when the customer (of this organization) has
 * no item of the product. Of several items of it (two subscriptions), one with access first,
 * then the newest.
 */
export async function getEntitlement(
  db: Queryable,
  counter: UsageCounter,
  orgId: number,
  customerId: number | string,
  productId: number | string,
  options: CheckOptions = {},
): Promise<Entitlement> {
  const product = parseIntegerId(productId);
  if (product === undefined) {
    await countOnly(counter, options.count);
    throw ApiError.notFound(`Entitlement to product ${productId}`);
  }
  const found = await entitlementsOf(db, counter, orgId, customerId, product, options);
  if (!found.length) throw ApiError.notFound(`Entitlement to product ${productId}`);
  return found.reduce((best, candidate) =>
    candidate.has_access !== best.has_access
      ? candidate.has_access
        ? candidate
        : best
      : candidate.subscription_item_id > best.subscription_item_id
        ? candidate
        : best,
  );
}

async function entitlementsOf(
  db: Queryable,
  counter: UsageCounter,
  orgId: number,
  customerId: number | string,
  productId: number | undefined,
  { now = new Date(), count }: CheckOptions,
): Promise<Entitlement[]> {
  const id = parseIntegerId(customerId);
  if (id === undefined) {
    await countOnly(counter, count);
    throw ApiError.notFound(`Customer ${customerId}`);
  }
  const nowMs = now.getTime();
  const guesses = guessesOf(counter);
  const guessKey = `${orgId}:${id}:${productId ?? '*'}`;
  const guessed = guesses.get(guessKey);
  // the last check's periods while they still hold this instant (as a rule), else those of its items now
  const guessedPeriods = !guessed
    ? []
    : guessed.metered.every((period) => period.startMs <= nowMs && nowMs < period.endMs)
      ? guessed.metered
      : meteredPeriods(orgId, guessed.items, periodsAt(guessed.items, nowMs));
  // The guessed counters read while the query runs, with the request counted in the same call. The
  // count is decided as soon as the store answers, whatever the query does: a refusal wins over
  // any other answer, and a 404 is counted like any request. Otherwise a failure of the read is the
  // query's to report first.
  let counted: Promise<() => Promise<bigint[]>> | undefined;
  let early: Promise<bigint[]> | undefined;
  if (count) {
    counted = counter.usedCounting(guessedPeriods, count.bucket).then((read) => {
      count.decide(read);
      return read.used;
    });
    counted.catch(() => {});
  } else if (guessedPeriods.length) {
    early = counter.used(guessedPeriods);
    early.catch(() => {});
  }
  let rows: ItemRow[];
  try {
    rows = await readerOf(db).submit({ orgId, customerId: id, productId: productId ?? null });
  } catch (error) {
    await counted;
    throw error;
  }
  if (!rows.length) {
    guesses.delete(guessKey);
    await counted;
    throw ApiError.notFound(`Customer ${customerId}`);
  }
  const items = rows.filter((row) => row.subscription_item_id !== null);
  const periods = periodsAt(items, nowMs);
  const metered = meteredPeriods(orgId, items, periods);
  const usedOfGuess = counted ? await counted : early ? () => early : undefined;
  const guessedRight = guessed !== undefined && samePeriods(guessedPeriods, metered);
  // A guess that held is kept as it is: replacing it per check would churn a long-lived Map, which
  // keeps everything that passes through it alive until a full collection (docs/decisions.md, "No
  // long-lived Map or Set churned per request").
  if (!guessedRight || guessedPeriods !== guessed.metered) remember(guesses, guessKey, { items, metered });
  const usedOfMetered = !metered.length
    ? []
    : usedOfGuess && guessedRight
      ? await usedOfGuess()
      : await counter.used(metered);
  // The next period's counters, built ahead in the background: no rebuild wait when it begins.
  // Asked once per process and counter (UsageCounter.prepare); a check that found what the last
  // one found asked already.
  if (!guessedRight) {
    counter.prepare(
      items.flatMap((row, i) =>
        row.usage_type === 'metered' && WITH_ACCESS.has(row.status!)
          ? [
              {
                orgId,
                subscriptionItemId: Number(row.subscription_item_id),
                ...periodOf(row, periods[i]!.endMs),
              },
            ]
          : [],
      ),
    );
  }
  let nth = 0;
  return items.map((row, i) => {
    // metered lists the metered items in the items' order
    const usedNow = row.usage_type === 'metered' ? usedOfMetered[nth++]! : 0n;
    const limit = row.usage_limit === null ? null : parseScaled(row.usage_limit, SCALE, 'half-even');
    return {
      product_id: Number(row.product_id),
      subscription_item_id: Number(row.subscription_item_id),
      has_access: WITH_ACCESS.has(row.status!) && (limit === null || usedNow < limit),
      usage_limit: limit === null ? null : formatScaled(limit, SCALE),
      used: formatScaled(usedNow, SCALE),
      remaining: limit === null ? null : formatScaled(limit > usedNow ? limit - usedNow : 0n, SCALE),
      period_end: new Date(periods[i]!.endMs).toISOString(),
    };
  });
}

/** A check answered before reading anything: its request is counted all the same. */
async function countOnly(counter: UsageCounter, count: RequestCount | undefined): Promise<void> {
  if (count) count.decide(await counter.usedCounting([], count.bucket));
}

interface ItemsQuery {
  orgId: number;
  customerId: number;
  productId: number | null;
}

const readers = new WeakMap<Queryable, Batcher<ItemsQuery, ItemRow[]>>();

/**
 * The items of every check of one turn of the event loop in ONE query (as libs/customers reads
 * customers): under load the round trip, and its system calls on both sides, is shared.
 */
function readerOf(db: Queryable): Batcher<ItemsQuery, ItemRow[]> {
  let reader = readers.get(db);
  if (!reader) {
    reader = new Batcher((queries) => readItems(db, queries), { lingerMs: 0, maxWeight: 500 });
    readers.set(db, reader);
  }
  return reader;
}

/**
 * Per query, the customer and its items (of the product, if one is asked): no row at all is a
 * customer the organization does not have. Each query's own organization: a batch mixes them.
 */
async function readItems(db: Queryable, queries: ItemsQuery[]): Promise<ItemRow[][]> {
  const { rows } = await db.query<ItemRow>(
    `SELECT k.n, c.id AS customer_id, si.id AS subscription_item_id, si.product_id, si.usage_type,
            si.usage_limit::text AS usage_limit, s.status, s.billing_period, s.billing_anchor_day,
            floor(extract(epoch FROM s.start_date) * 1000)::int8 AS start_ms,
            floor(extract(epoch FROM s.current_period_start) * 1000)::int8 AS current_period_start_ms,
            floor(extract(epoch FROM s.current_period_end) * 1000)::int8 AS current_period_end_ms
       FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) WITH ORDINALITY AS k (org_id, customer_id, product_id, n)
       JOIN customers c ON c.org_id = k.org_id AND c.id = k.customer_id
       LEFT JOIN subscriptions s ON s.org_id = c.org_id AND s.customer_id = c.id
       LEFT JOIN subscription_items si ON si.org_id = s.org_id AND si.subscription_id = s.id
                                      AND si.removed_at IS NULL AND (k.product_id IS NULL OR si.product_id = k.product_id)
      ORDER BY k.n, si.id`,
    [queries.map((q) => q.orgId), queries.map((q) => q.customerId), queries.map((q) => q.productId)],
  );
  const found: ItemRow[][] = queries.map(() => []);
  for (const row of rows) found[Number(row.n) - 1]!.push(row);
  return found;
}

/** Each item's period at `nowMs` (periodOf), in the items' order. */
function periodsAt(items: readonly ItemRow[], nowMs: number): { startMs: number; endMs: number }[] {
  return items.map((row) => periodOf(row, nowMs));
}

/** The counters the metered ones of `items` count in, given each item's period, in the items' order. */
function meteredPeriods(
  orgId: number,
  items: readonly ItemRow[],
  periods: readonly { startMs: number; endMs: number }[],
): CounterPeriod[] {
  const metered: CounterPeriod[] = [];
  items.forEach((row, i) => {
    if (row.usage_type !== 'metered') return;
    const { startMs, endMs } = periods[i]!;
    metered.push({ orgId, subscriptionItemId: Number(row.subscription_item_id), startMs, endMs });
  });
  return metered;
}

function samePeriods(a: readonly CounterPeriod[], b: readonly CounterPeriod[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (period, i) =>
        period.subscriptionItemId === b[i]!.subscriptionItemId &&
        period.startMs === b[i]!.startMs &&
        period.endMs === b[i]!.endMs,
    )
  );
}

function remember(guesses: Map<string, Guess>, key: string, guess: Guess): void {
  guesses.delete(key);
  if (guesses.size >= MAX_GUESSES) {
    // Map iterates in insertion order: the first entry is the one set longest ago
    const oldest = guesses.keys().next().value;
    if (oldest !== undefined) guesses.delete(oldest);
  }
  guesses.set(key, guess);
}

/**
 * The period `used` counts: the one holding now for a running subscription (the billing run may
 * not have moved it on yet); the stored one for any other (canceled, pending, expired).
 */
function periodOf(row: ItemRow, nowMs: number): { startMs: number; endMs: number } {
  const stored = { startMs: row.current_period_start_ms!, endMs: row.current_period_end_ms! };
  if (!WITH_ACCESS.has(row.status!) && row.status !== 'past_due') return stored;
  return periodAt(
    {
      startDateMs: row.start_ms!,
      billingPeriod: row.billing_period!,
      anchorDay: row.billing_anchor_day!,
      currentPeriodStartMs: stored.startMs,
      currentPeriodEndMs: stored.endMs,
    },
    nowMs,
  );
}
