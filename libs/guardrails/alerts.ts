import {
  getCreditBalance,
  getSubscriptionsItemQuantities,
  getSubscriptionsUsage,
  type PeriodQuantities,
  parseInput,
  UnbillableError,
} from '../billing/index.js';
import type { Database, Queryable } from '../db/index.js';
import { ApiError, type FieldError } from '../errors/index.js';
import { type DomainEvent, emitDomainEvents } from '../events/index.js';
import { readPage } from '../list-pages/index.js';
import { formatScaled, parseScaled } from '../money/index.js';
import {
  type Alert,
  type AlertMetric,
  type AlertStatus,
  CreateAlert,
  isUuid,
  type PaginationQuery,
  type SubscriptionUsage,
} from '../schemas/index.js';
import type { UsageReadStores } from '../usage/index.js';

/**
 * Spend alerts (docs/decisions.md, "Alerts fire once per crossing"). An alert watches one metric:
 * an item's period quantity or a subscription's period amount reaching its threshold, or its
 * customer's projected credit falling below it. Evaluation writes the alert's state and its event
 * in one transaction, on the condition that the state is still the one the crossing leaves: so a
 * crossing emits `alert.triggered` once, however many evaluators (redeliveries, restarts, two
 * processes) see it, and a rolled-back evaluation emits nothing. A new period sets usage alerts
 * back to OK silently.
 */

const SCALE = 8;
const COLUMNS = `a.id, a.org_id, a.customer_id, a.subscription_id, a.subscription_item_id, a.metric,
  a.threshold::text AS threshold, a.name, a.status, a.value::text AS value, a.triggered_at, a.period_start,
  a.created_at, a.evaluated_as_of`;
/** What an AlertState needs: the quantity alerts' reload reads every armed alert with these. */
const STATE_COLUMNS = `a.id, a.org_id, a.subscription_id, a.subscription_item_id, a.metric,
  a.threshold::text AS threshold, a.status, a.value::text AS value, a.evaluated_as_of`;

interface AlertRow {
  id: string;
  org_id: number;
  customer_id: number;
  subscription_id: number;
  subscription_item_id: number | null;
  metric: AlertMetric;
  threshold: string;
  name: string;
  status: AlertStatus;
  value: string | null;
  triggered_at: Date | null;
  period_start: Date | null;
  created_at: Date;
  /** The `as_of` of the reading the row holds (null before the first). */
  evaluated_as_of: Date | null;
}

const decimal = (text: string) => formatScaled(parseScaled(text, SCALE), SCALE);

function toAlert(row: AlertRow): Alert {
  return {
    id: row.id,
    object: 'alert',
    customer_id: row.customer_id,
    subscription_id: row.subscription_id,
    subscription_item_id: row.subscription_item_id,
    metric: row.metric,
    threshold: decimal(row.threshold),
    name: row.name,
    status: row.status,
    value: row.value === null ? null : decimal(row.value),
    triggered_at: row.triggered_at?.toISOString() ?? null,
    created_at: row.created_at.toISOString(),
  };
}

export interface AlertScope {
  /** Only this customer's subscriptions (the portal). */
  customerId?: number | undefined;
  /** Only usage_amount alerts may be made (the portal). */
  usageAmountOnly?: boolean | undefined;
}

/** POST /alerts: checked, stored, then evaluated at once (an alert already crossed fires now). */
export async function createAlert(
  db: Database,
  stores: UsageReadStores,
  orgId: number,
  input: unknown,
  scope: AlertScope = {},
): Promise<Alert> {
  const request = parseInput(CreateAlert, input);
  const { rows } = await db.query<{ customer_id: number; items: { id: number; usage_type: string }[] }>(
    `SELECT s.customer_id,
            (SELECT coalesce(json_agg(json_build_object('id', si.id, 'usage_type', si.usage_type)), '[]')
               FROM subscription_items si
              WHERE si.org_id = s.org_id AND si.subscription_id = s.id AND si.removed_at IS NULL) AS items
       FROM subscriptions s WHERE s.org_id = $1 AND s.id = $2`,
    [orgId, request.subscription_id],
  );
  const subscription = rows[0];
  if (!subscription || (scope.customerId !== undefined && subscription.customer_id !== scope.customerId)) {
    throw ApiError.notFound(`Subscription ${request.subscription_id}`);
  }
  const problems = alertProblems(request, subscription.items, scope);
  if (problems.length) throw ApiError.validation(problems);
  const { rows: made } = await db.query<AlertRow>(
    `INSERT INTO alerts AS a (org_id, customer_id, subscription_id, subscription_item_id, metric, threshold, name,
       created_in_portal)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
     RETURNING ${COLUMNS}`,
    [
      orgId,
      subscription.customer_id,
      request.subscription_id,
      request.subscription_item_id ?? null,
      request.metric,
      request.threshold,
      request.name ?? '',
      scope.usageAmountOnly === true,
    ],
  );
  await evaluateAlerts(db, stores, { alertIds: [made[0]!.id] });
  return getAlert(db, orgId, made[0]!.id);
}

function alertProblems(
  request: ReturnType<typeof CreateAlert.parse>,
  items: { id: number; usage_type: string }[],
  scope: AlertScope,
): FieldError[] {
  const problems: FieldError[] = [];
  const problem = (field: string, message: string, code = 'invalid_value') =>
    problems.push({ field, message, code });
  if (scope.usageAmountOnly && request.metric !== 'usage_amount') {
    problem('metric', 'Only usage_amount alerts can be made here.');
  }
  if (request.metric === 'usage_quantity') {
    const item = items.find((candidate) => candidate.id === request.subscription_item_id);
    if (request.subscription_item_id === undefined) {
      problem(
        'subscription_item_id',
        'A usage_quantity alert watches one metered item: name it.',
        'required',
      );
    } else if (!item) {
      problem(
        'subscription_item_id',
        `Item ${request.subscription_item_id} is not an item of this subscription.`,
      );
    } else if (item.usage_type !== 'metered') {
      problem(
        'subscription_item_id',
        `Item ${item.id} is licensed: only metered items have a usage quantity.`,
      );
    }
  } else if (request.subscription_item_id !== undefined) {
    problem('subscription_item_id', 'Only a usage_quantity alert names an item.');
  }
  const threshold = parseScaled(request.threshold, SCALE);
  if (request.metric === 'credit_balance' ? threshold < 0n : threshold <= 0n) {
    problem(
      'threshold',
      request.metric === 'credit_balance' ? 'Must be zero or more.' : 'Must be greater than zero.',
      'out_of_range',
    );
  }
  return problems;
}

export async function getAlert(db: Queryable, orgId: number, alertId: string): Promise<Alert> {
  if (!isUuid(alertId)) throw ApiError.notFound(`Alert ${alertId}`);
  const { rows } = await db.query<AlertRow>(
    `SELECT ${COLUMNS} FROM alerts a WHERE a.org_id = $1 AND a.id = $2`,
    [orgId, alertId.toLowerCase()],
  );
  if (!rows[0]) throw ApiError.notFound(`Alert ${alertId}`);
  return toAlert(rows[0]);
}

export async function deleteAlert(db: Queryable, orgId: number, alertId: string, scope: AlertScope = {}) {
  if (!isUuid(alertId)) throw ApiError.notFound(`Alert ${alertId}`);
  const { rowCount } = await db.query(
    `DELETE FROM alerts WHERE org_id = $1 AND id = $2 AND ($3::bigint IS NULL OR customer_id = $3)`,
    [orgId, alertId.toLowerCase(), scope.customerId ?? null],
  );
  if (!rowCount) throw ApiError.notFound(`Alert ${alertId}`);
}

export interface AlertFilter {
  subscription_id?: number | undefined;
  customer_id?: number | undefined;
  status?: AlertStatus | undefined;
}

export async function listAlerts(
  db: Queryable,
  orgId: number,
  filter: AlertFilter & PaginationQuery,
): Promise<{ data: Alert[]; total: number }> {
  const where = `org_id = $1 AND ($2::bigint IS NULL OR subscription_id = $2)
    AND ($3::bigint IS NULL OR customer_id = $3) AND ($4::text IS NULL OR status = $4)`;
  const values = [orgId, filter.subscription_id ?? null, filter.customer_id ?? null, filter.status ?? null];
  const { rows, total } = await readPage<AlertRow>(
    db,
    {
      table: 'alerts',
      alias: 'a',
      columns: COLUMNS,
      where,
      values,
      // alerts are a handful per subscription: counting them is an index range scan
      total: async () =>
        (
          await db.query<{ total: number }>(
            `SELECT count(*)::int AS total FROM alerts WHERE ${where}`,
            values,
          )
        ).rows[0]!.total,
    },
    filter,
  );
  return { data: rows.map(toAlert), total: await total };
}

export interface EvaluationScope {
  /** Alerts of these subscriptions, and the credit alerts of their customers. */
  subscriptions?: readonly { orgId: number; subscriptionId: number }[];
  /** Every alert of these customers. */
  customers?: readonly { orgId: number; customerId: number }[];
  alertIds?: readonly string[];
}

/**
 * Evaluates the alerts in `scope` against the metrics now and moves those that crossed. Returns
 * the events emitted. Usage is read for all the subscriptions at once, credit once per customer.
 */
export async function evaluateAlerts(
  db: Database,
  stores: UsageReadStores,
  scope: EvaluationScope,
): Promise<DomainEvent[]> {
  const alerts = await alertsIn(db, scope);
  if (alerts.length === 0) return [];
  // a quantity needs only its item's total: the invoice an amount is taken from is composed only
  // for the subscriptions of amount alerts
  const subscriptionsOf = (metric: AlertRow['metric']) =>
    uniqueBy(
      alerts.filter((alert) => alert.metric === metric),
      (alert) => alert.subscription_id,
    ).map((alert) => ({ orgId: alert.org_id, subscriptionId: alert.subscription_id }));
  const [quantities, usage] = await Promise.all([
    getSubscriptionsItemQuantities(db, stores, subscriptionsOf('usage_quantity')),
    getSubscriptionsUsage(db, stores, subscriptionsOf('usage_amount')),
  ]);
  const balances = new Map<number, { projected: string; as_of: string } | null>();
  for (const alert of alerts) {
    if (alert.metric === 'credit_balance' && !balances.has(alert.customer_id)) {
      const balance = await unlessUnbillable(() =>
        getCreditBalance(db, stores, alert.org_id, alert.customer_id),
      );
      balances.set(alert.customer_id, balance);
    }
  }
  const moves: { alert: AlertRow; reading: Reading; status: AlertStatus }[] = [];
  const unmoved: { alert: AlertRow; reading: Reading; status: AlertStatus }[] = [];
  for (const alert of alerts) {
    const reading =
      alert.metric === 'credit_balance'
        ? creditReading(alert, balances.get(alert.customer_id) ?? null)
        : alert.metric === 'usage_quantity'
          ? quantityReading(alert, quantities.get(alert.subscription_id) ?? null)
          : amountReading(alert, usage.get(alert.subscription_id) ?? null);
    if (!reading) continue;
    const samePeriod = (alert.period_start?.getTime() ?? null) === (reading.periodStart?.getTime() ?? null);
    const effective: AlertStatus = samePeriod ? alert.status : 'OK';
    const target: AlertStatus = reading.crossed ? 'TRIGGERED' : 'OK';
    if (effective !== target) moves.push({ alert, reading, status: target });
    else if (
      !samePeriod ||
      alert.value === null ||
      decimal(alert.value) !== decimal(reading.value) ||
      // a fresher as_of is written too: the quantity bound (alert-policy.ts) starts from it
      (alert.evaluated_as_of?.getTime() ?? 0) < reading.asOf.getTime()
    )
      unmoved.push({ alert, reading, status: target });
  }
  await writeReadings(db, unmoved);
  return moveAlerts(db, moves);
}

/** A metric that cannot be worked out now (a subscription that cannot be invoiced) is skipped. */
async function unlessUnbillable<T>(read: () => Promise<T>): Promise<T | null> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof UnbillableError || (error instanceof ApiError && error.code === 'NOT_FOUND'))
      return null;
    throw error;
  }
}

interface Reading {
  value: string;
  crossed: boolean;
  periodStart: Date | null;
  /** Usage counted up to this instant: readings apply in this order. */
  asOf: Date;
}

function quantityReading(alert: AlertRow, usage: PeriodQuantities | null): Reading | undefined {
  if (!usage) return undefined;
  const value = usage.quantities.get(alert.subscription_item_id ?? Number.NaN) ?? '0';
  return reachedReading(alert, value, usage.periodStart, usage.asOf);
}

function amountReading(alert: AlertRow, usage: SubscriptionUsage | null): Reading | undefined {
  if (!usage) return undefined;
  return reachedReading(alert, usage.total_amount, new Date(usage.period_start), new Date(usage.as_of));
}

/** A usage metric's reading: crossed once it reaches the threshold. */
function reachedReading(alert: AlertRow, value: string, periodStart: Date, asOf: Date): Reading {
  return {
    value,
    crossed: parseScaled(value, SCALE) >= parseScaled(alert.threshold, SCALE),
    periodStart,
    asOf,
  };
}

function creditReading(
  alert: AlertRow,
  balance: { projected: string; as_of: string } | null,
): Reading | undefined {
  if (balance === null) return undefined;
  return {
    value: balance.projected,
    crossed: parseScaled(balance.projected, SCALE) < parseScaled(alert.threshold, SCALE),
    periodStart: null,
    asOf: new Date(balance.as_of),
  };
}

/** What the alert policy needs to decide whether an alert must be read (alert-policy.ts). */
export interface AlertState {
  id: string;
  orgId: number;
  subscriptionId: number;
  subscriptionItemId: number | null;
  metric: AlertMetric;
  /** Scaled by 1e8, as quantities are. */
  threshold: bigint;
  status: AlertStatus;
  value: bigint | null;
  evaluatedAsOfMs: number | null;
}

/** The alerts of these subscriptions, the credit alerts of their customers, and these alerts (one query). */
export async function alertStatesOf(
  db: Queryable,
  subscriptions: readonly { orgId: number; subscriptionId: number }[],
  alertIds: readonly string[] = [],
  exceptMetric: AlertMetric | null = null,
): Promise<AlertState[]> {
  if (subscriptions.length === 0 && alertIds.length === 0) return [];
  const rows = await alertsIn<StateRow>(db, { subscriptions, alertIds }, exceptMetric, STATE_COLUMNS);
  return rows.map(stateOf);
}

type StateRow = Pick<
  AlertRow,
  | 'id'
  | 'org_id'
  | 'subscription_id'
  | 'subscription_item_id'
  | 'metric'
  | 'threshold'
  | 'status'
  | 'value'
  | 'evaluated_as_of'
>;

function stateOf(row: StateRow): AlertState {
  return {
    id: row.id,
    orgId: row.org_id,
    subscriptionId: row.subscription_id,
    subscriptionItemId: row.subscription_item_id,
    metric: row.metric,
    threshold: parseScaled(row.threshold, SCALE, 'half-even'),
    status: row.status,
    value: row.value === null ? null : parseScaled(row.value, SCALE, 'half-even'),
    evaluatedAsOfMs: row.evaluated_as_of?.getTime() ?? null,
  };
}

/**
 * Every `usage_quantity` alert (what the `alerts` group holds in memory, quantity-alerts.ts), or
 * those created or written at or after `changedSince` (updated_at: its transaction's start).
 */
export async function quantityAlertStates(db: Queryable, changedSince?: Date): Promise<AlertState[]> {
  const { rows } = await db.query<StateRow>(
    `SELECT ${STATE_COLUMNS} FROM alerts a
      WHERE a.metric = 'usage_quantity' AND ($1::timestamptz IS NULL OR a.updated_at >= $1)
      ORDER BY a.id`,
    [changedSince ?? null],
  );
  return rows.map(stateOf);
}

async function alertsIn<Row extends object = AlertRow>(
  db: Queryable,
  scope: EvaluationScope,
  /** Leave out this metric's alerts (the guardrails group leaves `usage_quantity` to its own). */
  exceptMetric: AlertMetric | null = null,
  columns = COLUMNS,
): Promise<Row[]> {
  const subscriptions = scope.subscriptions ?? [];
  const customers = scope.customers ?? [];
  const { rows } = await db.query<Row & Record<string, unknown>>(
    `SELECT ${columns} FROM alerts a
      WHERE (a.id = ANY($1::uuid[])
         OR (a.org_id, a.subscription_id) IN (SELECT * FROM unnest($2::bigint[], $3::bigint[]))
         OR (a.org_id, a.customer_id) IN (SELECT * FROM unnest($4::bigint[], $5::bigint[]))
         OR (a.metric = 'credit_balance' AND (a.org_id, a.customer_id) IN (
               SELECT s.org_id, s.customer_id FROM subscriptions s
                JOIN unnest($2::bigint[], $3::bigint[]) AS k(org_id, id) ON s.org_id = k.org_id AND s.id = k.id)))
        AND ($6::text IS NULL OR a.metric <> $6::text)
      ORDER BY a.id`,
    [
      scope.alertIds ?? [],
      subscriptions.map((s) => s.orgId),
      subscriptions.map((s) => s.subscriptionId),
      customers.map((c) => c.orgId),
      customers.map((c) => c.customerId),
      exceptMetric,
    ],
  );
  return rows;
}

/**
 * Writes the readings that move no alert, in one statement: the value, and in a new period the
 * silent reset. A reading older than the one already written (evaluated_as_of) is dropped.
 */
async function writeReadings(
  db: Database,
  readings: readonly { alert: AlertRow; reading: Reading; status: AlertStatus }[],
): Promise<void> {
  if (readings.length === 0) return;
  await db.query(
    `UPDATE alerts a SET value = r.value, period_start = r.period_start, evaluated_as_of = r.as_of,
            status = CASE WHEN a.period_start IS DISTINCT FROM r.period_start THEN r.status ELSE a.status END,
            triggered_at = CASE WHEN a.period_start IS DISTINCT FROM r.period_start AND r.status = 'OK'
                                THEN NULL ELSE a.triggered_at END,
            updated_at = now()
       FROM unnest($1::uuid[], $2::numeric[], $3::timestamptz[], $4::text[], $5::timestamptz[])
            AS r(id, value, period_start, status, as_of)
      WHERE a.id = r.id AND (a.evaluated_as_of IS NULL OR a.evaluated_as_of <= r.as_of)
        -- another evaluator moved it meanwhile on a reading that saw more (the same as_of can
        -- hold more counted usage, read later): a reading that disagrees leaves its value be
        AND (a.period_start IS DISTINCT FROM r.period_start OR a.status = r.status)`,
    [
      readings.map(({ alert }) => alert.id),
      readings.map(({ reading }) => reading.value),
      readings.map(({ reading }) => reading.periodStart),
      readings.map(({ status }) => status),
      readings.map(({ reading }) => reading.asOf),
    ],
  );
}

/**
 * Moves alerts to their readings' status, with their events, in one transaction: each move is
 * conditioned on the state it leaves (held, in id order, the order every evaluator locks in), so
 * two evaluators of one crossing move it (and emit) once.
 */
async function moveAlerts(
  db: Database,
  moves: readonly { alert: AlertRow; reading: Reading; status: AlertStatus }[],
): Promise<DomainEvent[]> {
  if (moves.length === 0) return [];
  return db.transaction(async (tx) => {
    // the state as it is now, held: another evaluator's move is seen, and waited for, here
    const { rows } = await tx.query<AlertRow & { was_same_period: boolean }>(
      `WITH r AS (SELECT * FROM unnest($1::uuid[], $2::text[], $3::numeric[], $4::timestamptz[], $5::timestamptz[])
                    AS r(id, status, value, period_start, as_of)),
            held AS (SELECT a.id, a.status, a.period_start, a.evaluated_as_of
                       FROM alerts a WHERE a.id IN (SELECT id FROM r) ORDER BY a.id FOR UPDATE)
       UPDATE alerts a SET status = r.status, value = r.value, period_start = r.period_start,
              evaluated_as_of = r.as_of, updated_at = now(),
              triggered_at = CASE WHEN r.status = 'TRIGGERED' THEN now() ELSE NULL END
         FROM held JOIN r ON r.id = held.id
        WHERE a.id = held.id
          AND (held.evaluated_as_of IS NULL OR held.evaluated_as_of <= r.as_of)
          AND (CASE WHEN held.period_start IS NOT DISTINCT FROM r.period_start THEN held.status ELSE 'OK' END)
              <> r.status
       RETURNING ${COLUMNS}, held.period_start IS NOT DISTINCT FROM r.period_start AS was_same_period`,
      [
        moves.map(({ alert }) => alert.id),
        moves.map(({ status }) => status),
        moves.map(({ reading }) => reading.value),
        moves.map(({ reading }) => reading.periodStart),
        moves.map(({ reading }) => reading.asOf),
      ],
    );
    // an alert another evaluator moved first is not returned: its event is the one. A usage alert
    // that starts a new period already crossed fires; one going back to OK in a new period does
    // so silently (only a TRIGGERED alert of the same period resolves).
    const events: DomainEvent[] = rows
      .filter((moved) => moved.status === 'TRIGGERED' || moved.was_same_period)
      .sort((a, b) => (a.id < b.id ? -1 : 1))
      .map(({ was_same_period: _, ...moved }) => ({
        orgId: moved.org_id,
        type: moved.status === 'TRIGGERED' ? 'alert.triggered' : 'alert.resolved',
        data: toAlert(moved),
      }));
    await emitDomainEvents(tx, events);
    return events;
  });
}

function uniqueBy<T>(values: readonly T[], key: (value: T) => unknown): T[] {
  const seen = new Set<unknown>();
  return values.filter((value) => !seen.has(key(value)) && seen.add(key(value)));
}
