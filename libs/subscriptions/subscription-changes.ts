import { groupCommit } from '../batching/index.js';
import {
  BILLABLE_STATUSES,
  type ChangeReadRow,
  type ChangingSubscription,
  changeReadColumns,
  changesNothing,
  type ItemSetPlan,
  type ItemToShow,
  itemSetWriteCtes,
  namedIds,
  type PlannedChange,
  parseInput,
  planChange,
  publicSubscriptionItem,
  type ResolvedEntry,
  subscriptionUpdatedEventData,
  toChangeRead,
} from '../billing/index.js';
import { Database, type Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { type DomainEvent, outboxInsert, wakeDispatcherAfterCommit } from '../events/index.js';
import {
  type PendingChange,
  parseIntegerId,
  type Subscription,
  type SubscriptionChange,
  SubscriptionChangeRequest,
  type SubscriptionStatus,
} from '../schemas/index.js';
import { SUBSCRIPTION_COLUMNS, type SubscriptionRow, toSubscription } from './subscriptions.js';

/**
 * A change of a subscription's items (docs/architecture.md, "A subscription change's way"), the one function behind POST
 * /subscriptions/{id}/changes and the console's `subscription update`. Two statements, no
 * transaction of its own: one reads the subscription, its items and what the change names; the
 * change is worked out in memory; one statement writes it all (items, proration lines, pending
 * change, subscription.updated in the outbox) on the condition that the subscription's row is still
 * the version read (its xmin). The row is updated by that statement, and by every writer of a
 * subscription's items, proration lines or pending change (a change, a billing run), so a
 * subscription changed in between fails the condition, writes nothing, and the change is worked
 * out again on what the other left: two changes, or a change and a run, never interleave and never
 * lose an update. A preview is the same without the write, so it equals what is applied.
 */

interface ChangeState extends ChangingSubscription, SubscriptionRow, ChangeReadRow {
  customer_id: number;
  status: SubscriptionStatus;
  next_billing_date: Date;
  billing_parked_reason: string | null;
  /** The row's version (xmin): the write's condition. */
  version: string;
  has_pending_change: boolean;
}

/** Rounds of read, work out, write before a change racing others gives up with a 409. */
const MAX_ROUNDS = 5;

type ParsedChange = ReturnType<typeof SubscriptionChangeRequest.parse>;

/** What a change reads: the subscription, and what its entries name. */
interface ChangeRead {
  id: number;
  orgId: number | null;
  productIds: number[];
  itemIds: number[];
  /** Ids for added items are drawn only for a change that will be written, never for a preview. */
  drawIds: boolean;
}

/** What a change writes, on the condition that the subscription is still `state.version`. */
interface ChangeWrite {
  state: Pick<ChangeState, 'id' | 'org_id' | 'version' | 'has_pending_change'>;
  plan?: ItemSetPlan;
  /** A change for the period end: the set it applies then. */
  scheduled?: { items: ResolvedEntry[]; effectiveAt: Date };
  event?: DomainEvent;
}

interface Outcome {
  answer: SubscriptionChange;
  /** Undefined: the change changes nothing, and nothing is written. */
  write: Omit<ChangeWrite, 'state'> | undefined;
}

export async function changeSubscription(
  db: Queryable,
  input: { subscriptionId: number | string; orgId?: number | undefined; change: unknown; now?: Date },
): Promise<SubscriptionChange> {
  const change = parseInput(SubscriptionChangeRequest, input.change);
  const now = input.now ?? new Date();
  const id = parseIntegerId(input.subscriptionId);
  if (id === undefined) throw ApiError.notFound(`Subscription ${input.subscriptionId}`);
  const statements = changeStatementsFor(db);
  const read: ChangeRead = {
    id,
    orgId: input.orgId ?? null,
    ...namedIds(change.items),
    drawIds: !change.preview,
  };
  const apply = () => applyChange(db, statements, read, change, now);
  // a preview writes nothing: it need not wait for a change of the same subscription
  return change.preview ? apply() : statements.oneAtATime(id, apply);
}

async function applyChange(
  db: Queryable,
  statements: ChangeStatements,
  read: ChangeRead,
  change: ParsedChange,
  now: Date,
): Promise<SubscriptionChange> {
  for (let round = 1; ; round++) {
    const state = await statements.read(read);
    if (!state) throw ApiError.notFound(`Subscription ${read.id}`);
    let outcome: Outcome;
    try {
      outcome = answerAndWriteOf(state, change, now);
    } catch (error) {
      // A refusal read from a row a billing run or another change is rewriting (a period that
      // ended, about to be invoiced) is judged again on what that writer leaves.
      if (round === 1 && error instanceof ApiError && error.status === 409) {
        await waitForWriters(db, state);
        continue;
      }
      throw error;
    }
    if (change.preview || !outcome.write) return outcome.answer;
    const updatedAt = await statements.write({ state, ...outcome.write });
    if (updatedAt) {
      return {
        ...outcome.answer,
        subscription: { ...outcome.answer.subscription, updated_at: updatedAt.toISOString() },
      };
    }
    if (round === MAX_ROUNDS) {
      throw ApiError.conflict(
        `Subscription ${read.id} kept changing while this change was applied; nothing was changed. Try again.`,
      );
    }
  }
}

interface ChangeStatements {
  read(request: ChangeRead): Promise<ChangeState | undefined>;
  write(request: ChangeWrite): Promise<Date | undefined>;
  /**
   * Runs `apply` after the changes of subscription `id` this process started before it: the
   * second of two changes of one subscription reads what the first wrote, instead of finding its
   * write refused and going round again. Other processes are kept apart by the version condition.
   */
  oneAtATime<T>(id: number, apply: () => Promise<T>): Promise<T>;
}

function queuePerKey(): ChangeStatements['oneAtATime'] {
  const tails = new Map<number, Promise<unknown>>();
  return (id, apply) => {
    const previous = tails.get(id);
    const run = previous ? previous.then(apply, apply) : apply();
    const tail = run.catch(() => undefined);
    tails.set(id, tail);
    void tail.then(() => {
      if (tails.get(id) === tail) tails.delete(id);
    });
    return run;
  };
}

const batchedStatements = new WeakMap<Database, ChangeStatements>();

/**
 * The reads and writes of changes. On a Database, the changes of concurrent requests share
 * statements (group commit: under load one statement and one commit serve several changes, each
 * with its own condition); a statement that fails is run again for each change alone, so an
 * error reaches only the change it belongs to. Inside a caller's transaction, one at a time.
 */
function changeStatementsFor(db: Queryable): ChangeStatements {
  if (!(db instanceof Database)) {
    return {
      read: async (request) => (await readChanges(db, [request]))[0],
      write: async (request) => (await writeChanges(db, [request]))[0],
      oneAtATime: (_id, apply) => apply(),
    };
  }
  let statements = batchedStatements.get(db);
  if (!statements) {
    const options = { lingerMs: BATCH_LINGER_MS, maxInFlight: BATCHES_IN_FLIGHT, maxWeight: BATCH_MAX };
    const reads = groupCommit((requests: ChangeRead[]) => readChanges(db, requests), options);
    const writes = groupCommit((requests: ChangeWrite[]) => writeChanges(db, requests), options);
    statements = { read: reads, write: writes, oneAtATime: queuePerKey() };
    batchedStatements.set(db, statements);
  }
  return statements;
}

/** While a statement runs, the changes for the next one gather for at most this long. */
const BATCH_LINGER_MS = 2;
/** Changes per statement, at most. */
const BATCH_MAX = 50;
/** Statements of each kind running at once before the next waits out the linger. */
const BATCHES_IN_FLIGHT = 2;

/** The subscriptions and what the changes name, in one statement: undefined for one not found. */
async function readChanges(
  db: Queryable,
  requests: readonly ChangeRead[],
): Promise<(ChangeState | undefined)[]> {
  const { rows } = await db.query<ChangeState & { key: number }>(
    `SELECT r.key, ${SUBSCRIPTION_COLUMNS}, s.org_id, s.currency, s.billing_parked_reason, s.xmin::text AS version,
            EXISTS (SELECT 1 FROM subscription_pending_changes c
                     WHERE c.org_id = s.org_id AND c.subscription_id = s.id) AS has_pending_change,
            ${changeReadColumns({ productIds: 'r.product_ids', itemIds: 'r.item_ids', periodEnd: 's.current_period_end', drawIds: 'r.draw_ids' })}
       FROM jsonb_to_recordset($1::jsonb) AS r(key integer, id bigint, org_id bigint, product_ids bigint[],
            item_ids bigint[], draw_ids boolean)
       JOIN subscriptions s ON s.id = r.id AND (r.org_id IS NULL OR s.org_id = r.org_id)
      WHERE s.id = ANY($2::bigint[])`,
    [
      JSON.stringify(
        requests.map((request, key) => ({
          key,
          id: request.id,
          org_id: request.orgId,
          product_ids: request.productIds,
          item_ids: request.itemIds,
          draw_ids: request.drawIds,
        })),
      ),
      // the ids again as an array, which the planner can look up by index (it cannot see into JSON)
      requests.map((request) => request.id),
    ],
  );
  const found = new Map(rows.map((row) => [row.key, row]));
  return requests.map((_, key) => found.get(key));
}

/**
 * The changes, in one statement: each on the condition that its subscription is still the version
 * it was worked out on (locked in id order, so that two such statements never deadlock). Answers
 * each subscription's new updated_at, or undefined when it was not written. Of two changes of one
 * subscription only the first is written: the other is worked out again on what it left.
 */
async function writeChanges(db: Queryable, requests: readonly ChangeWrite[]): Promise<(Date | undefined)[]> {
  const firsts = requests.filter(
    (request, n) => requests.findIndex((other) => other.state.id === request.state.id) === n,
  );
  const values: unknown[] = [];
  const param = (value: unknown) => `$${values.push(value)}`;
  const written = 'x.subscription_id IN (SELECT id FROM locked)';
  const planned = firsts.flatMap(({ state, plan }) => (plan ? [{ subscription: state, plan }] : []));
  const events = firsts.flatMap(({ state, event }) => (event ? [{ state, event }] : []));
  const { rows } = await db.query<{ id: number; updated_at: Date }>(
    `WITH requested AS (
       SELECT * FROM jsonb_to_recordset(${param(
         JSON.stringify(
           firsts.map(({ state, plan }) => ({
             org_id: state.org_id,
             id: state.id,
             version: state.version,
             // an immediate change supersedes a scheduled one (its item ids may no longer exist)
             drop_scheduled: plan !== undefined && state.has_pending_change,
           })),
         ),
       )}::jsonb) AS r(org_id bigint, id bigint, version xid, drop_scheduled boolean)
     ), locked AS (
       UPDATE subscriptions s SET updated_at = now()
         FROM (SELECT o.id FROM subscriptions o
                 JOIN requested r ON o.org_id = r.org_id AND o.id = r.id AND o.xmin = r.version
                WHERE o.id = ANY(${param(firsts.map(({ state }) => state.id))}::bigint[])
                ORDER BY o.id FOR NO KEY UPDATE OF o) l
        WHERE s.id = l.id
       RETURNING s.id, s.updated_at
     ), ${itemSetWriteCtes(planned, param, written)},
     scheduled AS (
       INSERT INTO subscription_pending_changes (subscription_id, org_id, items, effective_at)
       SELECT x.subscription_id, x.org_id, x.items, x.effective_at
         FROM jsonb_to_recordset(${param(
           JSON.stringify(
             firsts.flatMap(({ state, scheduled }) =>
               scheduled
                 ? [
                     {
                       subscription_id: state.id,
                       org_id: state.org_id,
                       items: scheduled.items,
                       effective_at: scheduled.effectiveAt,
                     },
                   ]
                 : [],
             ),
           ),
         )}::jsonb) AS x(subscription_id bigint, org_id bigint, items jsonb, effective_at timestamptz)
        WHERE ${written}
       ON CONFLICT (subscription_id) DO UPDATE SET items = EXCLUDED.items, effective_at = EXCLUDED.effective_at,
              created_at = now()
     ), unscheduled AS (
       DELETE FROM subscription_pending_changes c USING requested r
        WHERE c.org_id = r.org_id AND c.subscription_id = r.id AND r.drop_scheduled
          AND r.id IN (SELECT id FROM locked)
     ), events AS (${outboxInsert(
       events.map(({ event }) => event),
       param,
       { keys: events.map(({ state }) => state.id), onlyIf: 'e.gate IN (SELECT id FROM locked)' },
     )})
     SELECT id, updated_at FROM locked`,
    values,
  );
  if (rows.length > 0 && events.length > 0) await wakeDispatcherAfterCommit(db);
  const updated = new Map(rows.map((row) => [row.id, row.updated_at]));
  return requests.map((request) => (firsts.includes(request) ? updated.get(request.state.id) : undefined));
}

/** Waits until no transaction holds the subscription's row for writing. */
async function waitForWriters(db: Queryable, state: ChangeState): Promise<void> {
  await db.query('SELECT 1 FROM subscriptions WHERE org_id = $1 AND id = $2 FOR SHARE', [
    state.org_id,
    state.id,
  ]);
}

/**
 * Plans the change on the subscription as read (`state`) and answers what it would do: the
 * subscription after it, its proration lines, and what the write stores (items, lines, a pending
 * change, subscription.updated). A change that leaves the items as they are writes nothing and
 * emits nothing, but still drops a scheduled change (an immediate change supersedes it).
 */
function answerAndWriteOf(state: ChangeState, change: ParsedChange, now: Date): Outcome {
  assertChangeable(state, now, change.effective);
  const planned = planChange(state, toChangeRead(state), change, now);
  if (planned.effective === 'period_end') return scheduledOutcome(state, planned);
  const { plan } = planned;
  const answer: SubscriptionChange = {
    subscription: subscriptionAfterChange(state, plan.after, null),
    proration_lines: plan.proration_lines.map(({ product_id: _product, ...line }) => line),
    effective_at: plan.effective_at.toISOString(),
  };
  if (changesNothing(plan)) return { answer, write: state.has_pending_change ? { plan } : undefined };
  const event: DomainEvent = {
    orgId: state.org_id,
    type: 'subscription.updated',
    data: subscriptionUpdatedEventData(state, plan),
  };
  return { answer, write: { plan, event } };
}

/** A change for the period end: stored as the checked set, shown as the pending change. */
function scheduledOutcome(
  state: ChangeState,
  planned: Extract<PlannedChange, { effective: 'period_end' }>,
): Outcome {
  const effectiveAt = planned.effectiveAt.toISOString();
  return {
    answer: {
      subscription: subscriptionAfterChange(state, planned.current, {
        items: planned.items.map((item) => ({ ...item, usage_limit: item.usage_limit ?? null })),
        effective_at: effectiveAt,
      }),
      proration_lines: [],
      effective_at: effectiveAt,
    },
    write: { scheduled: { items: planned.items, effectiveAt: planned.effectiveAt } },
  };
}

/**
 * The subscription object after the change, from what the change read and wrote (the row as the
 * UPDATE returned it, the items as written): what GET /subscriptions/{id} answers next. Items in
 * id order; the items a preview would add (provisional ids, -1, -2, ...) last, in the order of
 * the entries, where the ids they get when applied put them.
 */
function subscriptionAfterChange(
  row: SubscriptionRow,
  items: readonly ItemToShow[],
  pendingChange: PendingChange | null,
): Subscription {
  const columns = Object.fromEntries(
    SUBSCRIPTION_COLUMNS.split(',').map((column) => {
      const name = column.trim().replace(/^s\./, '');
      return [name, (row as unknown as Record<string, unknown>)[name]];
    }),
  ) as SubscriptionRow;
  const shown = [...items]
    .sort((a, b) => itemOrder(a.subscription_item_id, b.subscription_item_id))
    .map(publicSubscriptionItem);
  return toSubscription(columns, shown, pendingChange);
}

/** Ids ascending; provisional ids (-1, -2, ...) after every real one, -1 first. */
function itemOrder(a: number, b: number): number {
  if (a > 0 !== b > 0) return a > 0 ? -1 : 1;
  return Math.abs(a) - Math.abs(b);
}

/** Whether the running period is the subscription's last: canceled at its end, or its term's last. */
function endsAtPeriodEnd(subscription: ChangeState): boolean {
  if (subscription.cancel_at_period_end) return true;
  const renews = subscription.auto_renew && subscription.initial_term_months !== null;
  return (
    subscription.term_type === 'termed' &&
    !renews &&
    subscription.subscription_end_date !== null &&
    subscription.subscription_end_date <= subscription.current_period_end
  );
}

function assertChangeable(subscription: ChangeState, now: Date, effective: 'now' | 'period_end'): void {
  if (subscription.status === 'canceled' || subscription.status === 'expired') {
    throw ApiError.conflict(
      `Subscription ${subscription.id} is ${subscription.status}; its items cannot change.`,
    );
  }
  if (subscription.billing_parked_reason !== null) {
    throw ApiError.conflict(
      `Subscription ${subscription.id} is parked (${subscription.billing_parked_reason}); unpark it or cancel it first.`,
    );
  }
  if (
    (BILLABLE_STATUSES as readonly string[]).includes(subscription.status) &&
    subscription.next_billing_date <= now
  ) {
    // proration is measured against the running period: one that ended must be invoiced first
    throw ApiError.conflict(
      `Subscription ${subscription.id} has a period that ended ${subscription.next_billing_date.toISOString()} and is ` +
        'not invoiced yet; the billing run must bill it before the items change.',
    );
  }
  if (effective === 'period_end' && endsAtPeriodEnd(subscription)) {
    throw ApiError.conflict(
      `Subscription ${subscription.id} ends at the end of its period (${subscription.current_period_end.toISOString()}); ` +
        'a change scheduled for then would never apply.',
    );
  }
  if (effective === 'period_end' && subscription.status === 'pending') {
    throw ApiError.conflict(
      `Subscription ${subscription.id} has not started; change it now, its items apply from its start.`,
    );
  }
  if (subscription.status !== 'pending' && now < subscription.current_period_start) {
    throw ApiError.conflict(
      `Subscription ${subscription.id}'s current period begins ${subscription.current_period_start.toISOString()}, after this change.`,
    );
  }
}
