import type { Database, Queryable } from '../../db/index.js';
import { ApiError } from '../../errors/index.js';
import { type DomainEvent, emitDomainEvents } from '../../events/index.js';
import { readPage } from '../../list-pages/index.js';
import { formatMoney, parseMoney } from '../../money/index.js';
import {
  type CreditGrant,
  type CreditGrantStatus,
  type CreditGrantWithLedger,
  type CreditLedgerEntry,
  isUuid,
  type PaginationQuery,
} from '../../schemas/index.js';
import type { BurnableGrant, GrantUse } from './burn-down.js';

/**
 * Credit grants as stored (docs/decisions.md, "Credits"). Invariants every writer keeps:
 * - amount = used + expired + voided + remaining (a CHECK on the table), and every movement is a
 *   ledger entry whose `remaining_after` is the grant's remaining after it;
 * - every change of a customer's grants holds the customer's row (FOR NO KEY UPDATE) first, then
 *   the grants' rows: postings, voids, expiries and top-ups of one customer apply one after the
 *   other, so a grant's cent is never spent twice and a posting racing a void or an expiry sees the
 *   grant whole or not at all.
 */

export const GRANT_COLUMNS = `g.id, g.org_id, g.customer_id, g.name, g.category, g.currency, g.amount::text,
  g.remaining::text, g.priority, g.applies_to, g.effective_at, g.expires_at, g.status, g.invoice_id, g.created_at,
  g.updated_at`;

export interface GrantRow {
  id: string;
  org_id: number;
  customer_id: number;
  name: string;
  category: 'paid' | 'promotional';
  currency: string;
  amount: string;
  remaining: string;
  priority: number;
  applies_to: 'all' | 'usage';
  effective_at: Date;
  expires_at: Date | null;
  status: CreditGrantStatus;
  invoice_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export function toCreditGrant(row: GrantRow): CreditGrant {
  return {
    id: row.id,
    object: 'credit_grant',
    customer_id: row.customer_id,
    name: row.name,
    category: row.category,
    currency: row.currency.trim(),
    amount: formatMoney(parseMoney(row.amount)),
    remaining: formatMoney(parseMoney(row.remaining)),
    priority: row.priority,
    applies_to: row.applies_to,
    effective_at: row.effective_at.toISOString(),
    expires_at: row.expires_at?.toISOString() ?? null,
    status: row.status,
    invoice_id: row.invoice_id,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export function toBurnableGrant(row: GrantRow): BurnableGrant {
  return { ...row, currency: row.currency.trim() };
}

const grantEvent = (type: DomainEvent['type'], row: GrantRow): DomainEvent => ({
  orgId: row.org_id,
  type,
  data: toCreditGrant(row),
});

/** The customer whose grants change, held until the transaction ends; 404 when not in `orgId`. */
export async function lockCreditCustomer(
  tx: Queryable,
  customerId: number,
  orgId: number | undefined,
): Promise<{ org_id: number; currency: string }> {
  const { rows } = await tx.query<{ org_id: number; currency: string }>(
    `SELECT c.org_id, o.default_currency AS currency FROM customers c JOIN organizations o ON o.id = c.org_id
      WHERE c.id = $1 AND ($2::bigint IS NULL OR c.org_id = $2)
        FOR NO KEY UPDATE OF c`,
    [customerId, orgId ?? null],
  );
  if (!rows[0]) throw ApiError.notFound(`Customer ${customerId}`);
  return { org_id: rows[0].org_id, currency: rows[0].currency.trim() };
}

export interface NewGrant {
  org_id: number;
  customer_id: number;
  name: string;
  category: 'paid' | 'promotional';
  currency: string;
  amount: bigint;
  priority: number;
  applies_to: 'all' | 'usage';
  /** null: the transaction's now(). */
  effective_at: Date | null;
  expires_at: Date | null;
  status: 'PENDING' | 'ACTIVE';
  invoice_id: string | null;
  reference: string | null;
  source: 'request' | 'top_up' | 'credit_note';
}

/** Inserts a grant and its `grant` ledger entry; the caller holds the customer. */
export async function insertGrant(tx: Queryable, grant: NewGrant): Promise<GrantRow> {
  const amount = formatMoney(grant.amount);
  const { rows } = await tx.query<GrantRow>(
    `WITH g AS (
       INSERT INTO credit_grants (org_id, customer_id, name, category, currency, amount, remaining, priority,
         applies_to, effective_at, expires_at, status, invoice_id, reference, source)
       VALUES ($1, $2, $3, $4, $5, $6, $6, $7, $8, coalesce($9, now()), $10, $11, $12, $13, $14)
       RETURNING *
     ), ledger AS (
       INSERT INTO credit_grant_ledger (org_id, credit_grant_id, type, amount, remaining_after)
       SELECT org_id, id, 'grant', amount, remaining FROM g
     )
     SELECT ${GRANT_COLUMNS} FROM g`,
    [
      grant.org_id,
      grant.customer_id,
      grant.name,
      grant.category,
      grant.currency,
      amount,
      grant.priority,
      grant.applies_to,
      grant.effective_at,
      grant.expires_at,
      grant.status,
      grant.invoice_id,
      grant.reference,
      grant.source,
    ],
  );
  return rows[0]!;
}

export async function findGrantByReference(
  tx: Queryable,
  orgId: number,
  customerId: number,
  reference: string,
): Promise<(GrantRow & { reference: string }) | undefined> {
  const { rows } = await tx.query<GrantRow & { reference: string }>(
    `SELECT ${GRANT_COLUMNS}, g.reference FROM credit_grants g
      WHERE g.org_id = $1 AND g.customer_id = $2 AND g.reference = $3`,
    [orgId, customerId, reference],
  );
  return rows[0];
}

/** One grant, held until the transaction ends (its customer first: see the invariants above). */
export async function lockGrant(
  tx: Queryable,
  grantId: string,
  orgId: number | undefined,
): Promise<GrantRow> {
  if (!isUuid(grantId)) throw ApiError.notFound(`Credit grant ${grantId}`);
  const { rows: owner } = await tx.query<{ customer_id: number; org_id: number }>(
    'SELECT customer_id, org_id FROM credit_grants WHERE id = $1 AND ($2::bigint IS NULL OR org_id = $2)',
    [grantId, orgId ?? null],
  );
  if (!owner[0]) throw ApiError.notFound(`Credit grant ${grantId}`);
  await lockCreditCustomer(tx, owner[0].customer_id, owner[0].org_id);
  const { rows } = await tx.query<GrantRow>(
    `SELECT ${GRANT_COLUMNS} FROM credit_grants g WHERE g.org_id = $1 AND g.id = $2 FOR UPDATE`,
    [owner[0].org_id, grantId],
  );
  return rows[0]!;
}

/** What posting reads of a held grant: what the burn-down and the expiry before it need. */
export interface HeldGrant extends BurnableGrant {
  org_id: number;
  customer_id: number;
}

/**
 * The ACTIVE grants of customers being posted for, in id order. The caller holds the customers'
 * rows, which every writer of grants takes first (see above): that alone keeps these grants as
 * read until the transaction ends, so they are not locked one by one (a row lock writes each).
 * Only the burn-down's columns, as one JSON array: a billing run batch reads every grant of its
 * customers, and parsing them row by row, timestamps by pattern, cost the run more than the query.
 * Instants are kept to the millisecond, as the driver keeps them for readActiveGrants.
 */
export async function activeGrantsOfHeld(
  tx: Queryable,
  customers: readonly { org_id: number; id: number }[],
): Promise<Map<number, HeldGrant[]>> {
  const byCustomer = new Map<number, HeldGrant[]>();
  if (customers.length === 0) return byCustomer;
  const { rows } = await tx.query<{ grants: string }>(
    `SELECT coalesce(json_agg(json_build_array(g.id, g.org_id, g.customer_id, g.status, g.currency,
              g.remaining::text, g.priority, g.applies_to, g.effective_at, g.expires_at, g.created_at)
              ORDER BY g.id), '[]')::text AS grants
       FROM credit_grants g
      WHERE g.org_id = ANY($1::bigint[]) AND g.customer_id = ANY($2::bigint[]) AND g.status = 'ACTIVE'`,
    [[...new Set(customers.map((c) => c.org_id))], customers.map((c) => c.id)],
  );
  type Fields = [
    string,
    number,
    number,
    HeldGrant['status'],
    string,
    string,
    number,
    HeldGrant['applies_to'],
    string,
    string | null,
    string,
  ];
  for (const [
    id,
    orgId,
    customerId,
    status,
    currency,
    remaining,
    priority,
    appliesTo,
    effectiveAt,
    expiresAt,
    createdAt,
  ] of JSON.parse(rows[0]!.grants) as Fields[]) {
    const grant: HeldGrant = {
      id,
      org_id: orgId,
      customer_id: customerId,
      status,
      currency: currency.trim(),
      remaining,
      priority,
      applies_to: appliesTo,
      effective_at: new Date(effectiveAt),
      expires_at: expiresAt === null ? null : new Date(expiresAt),
      created_at: new Date(createdAt),
    };
    const list = byCustomer.get(customerId);
    if (list) list.push(grant);
    else byCustomer.set(customerId, [grant]);
  }
  return byCustomer;
}

/** A customer's ACTIVE grants as they stand, unheld: what a preview of the burn-down reads. */
export async function readActiveGrants(
  db: Queryable,
  orgId: number,
  customerId: number,
): Promise<GrantRow[]> {
  const { rows } = await db.query<GrantRow>(
    `SELECT ${GRANT_COLUMNS} FROM credit_grants g
      WHERE g.org_id = $1 AND g.customer_id = $2 AND g.status = 'ACTIVE' ORDER BY g.id`,
    [orgId, customerId],
  );
  return rows;
}

/**
 * Lapses the remainder of each ACTIVE grant whose `expires_at` has come by `at`: EXPIRED, an
 * `expiry` ledger entry for what was left, credit_grant.expired. The grants are held by the caller.
 * Returns the events, and the grants still ACTIVE.
 */
export async function expireDue<Grant extends Pick<GrantRow, 'id' | 'status' | 'expires_at'>>(
  tx: Queryable,
  grants: readonly Grant[],
  at: Date,
): Promise<{ events: DomainEvent[]; active: Grant[] }> {
  const due = grants.filter(
    (grant) => grant.status === 'ACTIVE' && grant.expires_at !== null && grant.expires_at <= at,
  );
  if (due.length === 0) return { events: [], active: [...grants] };
  const { rows } = await tx.query<GrantRow>(
    `WITH lapsed AS (
       UPDATE credit_grants g SET status = 'EXPIRED', expired = g.expired + g.remaining, remaining = 0,
              updated_at = now()
        WHERE g.id = ANY($1::uuid[]) AND g.status = 'ACTIVE'
       RETURNING g.*
     ), ledger AS (
       -- the statement's snapshot: p.remaining is what was left before the update
       INSERT INTO credit_grant_ledger (org_id, credit_grant_id, type, amount, remaining_after)
       SELECT l.org_id, l.id, 'expiry', p.remaining, 0
         FROM lapsed l JOIN credit_grants p ON p.id = l.id
        WHERE p.remaining > 0
     )
     SELECT ${GRANT_COLUMNS} FROM lapsed g ORDER BY g.id`,
    [due.map((grant) => grant.id)],
  );
  const lapsed = new Set(rows.map((row) => row.id));
  return {
    events: rows.map((row) => grantEvent('credit_grant.expired', row)),
    active: grants.filter((grant) => !lapsed.has(grant.id)),
  };
}

export interface RecordedUse extends GrantUse {
  org_id: number;
  invoice_id: string;
}

export const CREDIT_GRANT_NOTE = 'Prepaid credits applied';

/**
 * Writes what a burn-down used: one CREDIT_MEMO per use on the invoice it paid (naming the grant),
 * a `use` ledger entry each, and the grants' remainders; a grant used up is DEPLETED
 * (credit_grant.depleted). The grants are held by the caller and `uses` are in burn-down order.
 *
 * One statement for a whole billing run batch, its rows as parallel arrays (unnest keeps their
 * order, so the ledger's ids follow the burn-down order). Each grant is updated once, from its
 * total use, found through its primary key (a join on a derived table would scan every grant per
 * batch), and only where its remaining is still what the burn-down was planned from: a plan made
 * from stale grants (a writer that did not hold the customer) updates fewer grants than it used,
 * and the statement fails instead of spending a cent twice.
 */
export async function recordGrantUses(tx: Queryable, uses: readonly RecordedUse[]): Promise<DomainEvent[]> {
  if (uses.length === 0) return [];
  const spent = new Map<string, { used: bigint; before: bigint }>();
  for (const use of uses) {
    const amount = parseMoney(use.amount);
    const grant = spent.get(use.credit_grant_id);
    // the first use of a grant in burn-down order saw its remaining whole
    if (grant) grant.used += amount;
    else spent.set(use.credit_grant_id, { used: amount, before: parseMoney(use.remaining_after) + amount });
  }
  const grants = [...spent.entries()];
  const { rows } = await tx.query<GrantRow & { spent: number }>(
    `WITH memo AS (
       INSERT INTO invoice_transactions (org_id, invoice_id, type, amount, method, status, note, credit_grant_id)
       SELECT org_id, invoice_id, 'CREDIT_MEMO', amount, 'EXTERNAL', 'COMPLETED', $6, credit_grant_id
         FROM unnest($1::bigint[], $2::uuid[], $3::uuid[], $4::numeric[]) AS x(org_id, invoice_id, credit_grant_id, amount)
     ), ledger AS (
       INSERT INTO credit_grant_ledger (org_id, credit_grant_id, type, amount, invoice_id, remaining_after)
       SELECT org_id, credit_grant_id, 'use', amount, invoice_id, remaining_after
         FROM unnest($1::bigint[], $2::uuid[], $3::uuid[], $4::numeric[], $5::numeric[])
              AS x(org_id, invoice_id, credit_grant_id, amount, remaining_after)
     ), spent AS (
       UPDATE credit_grants g
          SET remaining = g.remaining - s.amount, used = g.used + s.amount,
              status = CASE WHEN g.remaining - s.amount = 0 THEN 'DEPLETED' ELSE g.status END, updated_at = now()
         FROM unnest($7::uuid[], $8::numeric[], $9::numeric[]) AS s(id, amount, before)
        WHERE g.id = ANY($7::uuid[]) AND g.id = s.id AND g.status = 'ACTIVE' AND g.remaining = s.before
       RETURNING g.*
     )
     SELECT n.spent, ${GRANT_COLUMNS}
       FROM (SELECT count(*)::int AS spent FROM spent) n
       LEFT JOIN spent g ON g.status = 'DEPLETED'
      ORDER BY g.id`,
    [
      arrayLiteral(uses.map((use) => use.org_id)),
      arrayLiteral(uses.map((use) => use.invoice_id)),
      arrayLiteral(uses.map((use) => use.credit_grant_id)),
      arrayLiteral(uses.map((use) => use.amount)),
      arrayLiteral(uses.map((use) => use.remaining_after)),
      CREDIT_GRANT_NOTE,
      arrayLiteral(grants.map(([id]) => id)),
      arrayLiteral(grants.map(([, grant]) => formatMoney(grant.used))),
      arrayLiteral(grants.map(([, grant]) => formatMoney(grant.before))),
    ],
  );
  if (rows[0]!.spent !== grants.length) {
    // transient (503): the caller's transaction rolls back and a retry plans from the grants as they are
    throw ApiError.serviceUnavailable(
      `Credit grants changed under a posting: ${grants.length - rows[0]!.spent} of ${grants.length} ` +
        'were not as its burn-down read them; try again.',
    );
  }
  return rows.filter((row) => row.id !== null).map((row) => grantEvent('credit_grant.depleted', row));
}

/**
 * A Postgres array literal of values that need no quoting (ids, uuids, decimal strings): what the
 * driver would send for the array, without escaping each element (a batch passes thousands).
 */
function arrayLiteral(values: readonly (string | number)[]): string {
  return `{${values.join(',')}}`;
}

/**
 * Voids a held grant: what is left lapses (`void` ledger entry), what was used stays used. A
 * PENDING grant's whole amount is voided (its remaining is its amount). Already DEPLETED, EXPIRED
 * or VOIDED: nothing changes.
 */
export async function voidHeldGrant(tx: Queryable, grant: GrantRow): Promise<GrantRow> {
  if (grant.status !== 'ACTIVE' && grant.status !== 'PENDING') return grant;
  const { rows } = await tx.query<GrantRow>(
    `WITH ledger AS (
       INSERT INTO credit_grant_ledger (org_id, credit_grant_id, type, amount, remaining_after)
       SELECT org_id, id, 'void', remaining, 0 FROM credit_grants WHERE id = $1 AND remaining > 0
     )
     UPDATE credit_grants g SET status = 'VOIDED', voided = g.voided + g.remaining, remaining = 0, updated_at = now()
      WHERE g.id = $1
     RETURNING ${GRANT_COLUMNS}`,
    [grant.id],
  );
  return rows[0]!;
}

/** The PENDING grant a Prepaid credits invoice sells, held; undefined for any other invoice. */
export async function lockGrantSoldBy(
  tx: Queryable,
  orgId: number,
  invoiceId: string,
): Promise<GrantRow | undefined> {
  const { rows } = await tx.query<GrantRow>(
    `SELECT ${GRANT_COLUMNS} FROM credit_grants g WHERE g.org_id = $1 AND g.invoice_id = $2 FOR UPDATE`,
    [orgId, invoiceId],
  );
  return rows[0];
}

/** A held PENDING grant whose invoice was paid becomes ACTIVE. */
export async function activateHeldGrant(tx: Queryable, grant: GrantRow): Promise<GrantRow> {
  if (grant.status !== 'PENDING') return grant;
  const { rows } = await tx.query<GrantRow>(
    `UPDATE credit_grants g SET status = 'ACTIVE', updated_at = now() WHERE g.id = $1 RETURNING ${GRANT_COLUMNS}`,
    [grant.id],
  );
  return rows[0]!;
}

export async function getCreditGrant(
  db: Queryable,
  orgId: number,
  grantId: string,
): Promise<CreditGrantWithLedger> {
  if (!isUuid(grantId)) throw ApiError.notFound(`Credit grant ${grantId}`);
  const { rows } = await db.query<
    GrantRow & { ledger: (Omit<CreditLedgerEntry, 'created_at'> & { created_at: string })[] }
  >(
    `SELECT ${GRANT_COLUMNS},
            (SELECT coalesce(json_agg(json_build_object('type', l.type, 'amount', l.amount::text,
                       'invoice_id', l.invoice_id, 'remaining_after', l.remaining_after::text,
                       'created_at', l.created_at) ORDER BY l.id), '[]')
               FROM credit_grant_ledger l WHERE l.credit_grant_id = g.id) AS ledger
       FROM credit_grants g WHERE g.org_id = $1 AND g.id = $2`,
    [orgId, grantId.toLowerCase()],
  );
  const row = rows[0];
  if (!row) throw ApiError.notFound(`Credit grant ${grantId}`);
  return {
    ...toCreditGrant(row),
    ledger: row.ledger.map((entry) => ({
      ...entry,
      amount: formatMoney(parseMoney(entry.amount)),
      remaining_after: formatMoney(parseMoney(entry.remaining_after)),
      created_at: new Date(entry.created_at).toISOString(),
    })),
  };
}

/** A customer's grants, newest first; 404 when the customer is not the organization's. */
export async function listCreditGrants(
  db: Queryable,
  orgId: number,
  customerId: number,
  query: PaginationQuery & { status?: CreditGrantStatus | undefined },
): Promise<{ data: CreditGrant[]; total: number }> {
  const customer = await db.query('SELECT 1 FROM customers WHERE org_id = $1 AND id = $2', [
    orgId,
    customerId,
  ]);
  if (customer.rowCount === 0) throw ApiError.notFound(`Customer ${customerId}`);
  const where = `org_id = $1 AND customer_id = $2 AND ($3::text IS NULL OR status = $3)`;
  const values = [orgId, customerId, query.status ?? null];
  const { rows, total } = await readPage<GrantRow>(
    db,
    {
      table: 'credit_grants',
      alias: 'g',
      columns: GRANT_COLUMNS,
      where,
      values,
      // a customer holds a handful of grants: counting them is an index range scan
      total: async () =>
        (
          await db.query<{ total: number }>(
            `SELECT count(*)::int AS total FROM credit_grants WHERE ${where}`,
            values,
          )
        ).rows[0]!.total,
    },
    query,
  );
  return { data: rows.map(toCreditGrant), total: await total };
}

/**
 * The expiry sweep (the scheduler's, and each billing run's): every ACTIVE grant whose
 * `expires_at` has come lapses, its customer held as every writer of grants does. Returns the
 * customers whose grants expired, for their top-up checks.
 */
export async function expireCreditGrants(
  db: Database,
  now: Date,
): Promise<{ orgId: number; customerId: number }[]> {
  const touched: { orgId: number; customerId: number }[] = [];
  for (;;) {
    const batch = await db.transaction(async (tx) => {
      const { rows: customers } = await tx.query<{ org_id: number; id: number }>(
        `SELECT c.org_id, c.id FROM customers c
          WHERE (c.org_id, c.id) IN (SELECT g.org_id, g.customer_id FROM credit_grants g
                                      WHERE g.status = 'ACTIVE' AND g.expires_at <= $1 LIMIT 200)
          ORDER BY c.id FOR NO KEY UPDATE OF c`,
        [now],
      );
      if (customers.length === 0) return [];
      const held = await activeGrantsOfHeld(tx, customers);
      const events: DomainEvent[] = [];
      for (const grants of held.values()) events.push(...(await expireDue(tx, grants, now)).events);
      await emitDomainEvents(tx, events);
      return customers.map((c) => ({ orgId: c.org_id, customerId: c.id }));
    });
    if (batch.length === 0) return touched;
    touched.push(...batch);
  }
}
