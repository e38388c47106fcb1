import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  postDraft,
  rerateDirtyDrafts,
  runBilling,
  type UsageForTransaction,
  usageSource,
  withdrawInvoice,
} from '../../libs/billing/index.js';
import { Database, migrate, startEmbeddedPostgres } from '../../libs/db/index.js';
import { formatMoney, parseMoney } from '../../libs/money/index.js';
import { createOrganization, setOrganizationSettings } from '../../libs/organizations/index.js';
import { PostgresUsageAggregator, type UsageReadStores, voidUsageEvent } from '../../libs/usage/index.js';
import { createTestDatabase } from '../helpers/database.js';
import { freePort } from '../helpers/processes.js';
import { readStoresOver } from '../helpers/read-stores.js';
import { basicCatalog, customerIn, recordUsage, subscribe } from './fixtures.js';

/**
 * The invariant of late usage (docs/decisions.md "Late usage"): for every period of every
 * subscription, what invoices billed of it (the period's invoice plus the late-usage lines of later
 * invoices, withdrawn invoices aside) is exactly the quantity of its non-voided events, after runs,
 * reruns, drafts, grace periods, voids, withdrawals and late events in a random order. Both modes.
 */

const DAY = 86_400_000;
const JAN = Date.UTC(2026, 0, 1);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const monthStart = (month: number) => Date.UTC(2026, month, 1);
const label = (month: number) => `${MONTHS[month]} 1-${new Date(monthStart(month + 1) - 1).getUTCDate()}`;

async function openDatabase(mode: 'postgres' | 'pglite'): Promise<{ db: Database; close(): Promise<void> }> {
  if (mode === 'postgres') {
    const database = await createTestDatabase('late_usage_invariant');
    return { db: database.db, close: () => database.drop() };
  }
  const dataDir = await mkdtemp(path.join(tmpdir(), 'billing-late-inv-'));
  const server = await startEmbeddedPostgres({ dataDir, host: '127.0.0.1', port: freePort() });
  const db = new Database(server.url, { poolSize: 3 });
  await migrate(db);
  return {
    db,
    async close() {
      await db.close();
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

describe.each([
  ['postgres', 120],
  ['pglite', 70],
] as const)('late usage invariant (%s)', (mode, steps) => {
  let db: Database;
  let close: () => Promise<void>;
  let usage: UsageForTransaction;
  let stores: UsageReadStores;
  beforeAll(async () => {
    ({ db, close } = await openDatabase(mode));
    usage = usageSource(new PostgresUsageAggregator(db));
    stores = readStoresOver(db);
  }, 60_000);
  afterAll(() => close?.());

  it.each([1, 2])(
    'bills every period exactly its counted usage (seed %i)',
    async (seed) => {
      const rand = random(seed * 7919 + steps);
      const pick = <T>(values: readonly T[]): T => values[Math.floor(rand() * values.length)]!;
      const { id: orgId } = await createOrganization(db, { name: `Invariant ${seed}` });
      const { id: graceOrg } = await createOrganization(db, { name: `Invariant grace ${seed}` });
      await setOrganizationSettings(db, graceOrg, { invoiceGraceHours: 48 });
      const subscriptions: { orgId: number; id: number; item: number }[] = [];
      for (const org of [orgId, graceOrg]) {
        const { seats, apiCalls } = await basicCatalog(db, org);
        const customerId = await customerIn(db, org, { state_province: 'AB' });
        for (let i = 0; i < 2; i++) {
          const subscription = await subscribe(
            db,
            org,
            {
              customer_id: customerId,
              items: [{ product_id: seats }, { product_id: apiCalls }],
              start_date: new Date(JAN),
            },
            new Date(JAN),
          );
          subscriptions.push({
            orgId: org,
            id: subscription.id,
            item: subscription.items.find((item) => item.usage_type === 'metered')!.id,
          });
        }
      }
      let now = JAN + DAY;
      const end = monthStart(5); // June 1st: January to May are billed
      const log: string[] = [];
      for (let step = 0; step < steps && now < end; step++) {
        const op = rand();
        const sub = pick(subscriptions);
        if (op < 0.45) {
          // an event of any day so far, now and then at a period's first instant
          const boundary = rand() < 0.15;
          const month = new Date(now).getUTCMonth();
          const at = boundary
            ? monthStart(Math.floor(rand() * (month + 1)))
            : JAN + Math.floor(rand() * (now - JAN));
          const quantity = String(1 + Math.floor(rand() * 150));
          await recordUsage(db, sub.orgId, sub.item, quantity, new Date(at).toISOString());
          log.push(`event ${sub.id} ${quantity} @${new Date(at).toISOString()}`);
        } else if (op < 0.6) {
          const { rows } = await db.query<{ id: string }>(
            'SELECT id FROM usage_events WHERE org_id = $1 AND subscription_item_id = $2 AND voided_at IS NULL ORDER BY id',
            [sub.orgId, sub.item],
          );
          if (!rows.length) continue;
          const id = pick(rows).id;
          const outcome = await voidUsageEvent(db, stores, sub.orgId, id).then(
            () => 'voided',
            (error: { code?: string }) => {
              if (error.code !== 'CONFLICT') throw error;
              return 'conflict';
            },
          );
          if (outcome === 'voided') await rerateDirtyDrafts(db, { orgId: sub.orgId });
          log.push(`void ${sub.id} ${outcome}`);
        } else if (op < 0.8) {
          now += Math.floor(rand() * 12 * DAY);
          const post = rand() < 0.8;
          await runBilling(db, { usage, now: new Date(now), post });
          log.push(`run ${new Date(now).toISOString()} post=${post}`);
          if (rand() < 0.3) {
            await runBilling(db, { usage, now: new Date(now), post });
            log.push('rerun');
          }
        } else if (op < 0.9) {
          const { rows } = await db.query<{ id: string; org_id: number }>(
            "SELECT id, org_id FROM invoices WHERE status = 'DRAFT' AND subscription_id IS NOT NULL ORDER BY id",
          );
          if (!rows.length) continue;
          const draft = pick(rows);
          if (rand() < 0.5) {
            await db.transaction((tx) =>
              withdrawInvoice(tx, { invoiceId: draft.id, orgId: Number(draft.org_id) }),
            );
            log.push(`withdraw ${draft.id}`);
          } else {
            await db.transaction((tx) => postDraft(tx, { invoiceId: draft.id, orgId: Number(draft.org_id) }));
            log.push(`post ${draft.id}`);
          }
        } else {
          await rerateDirtyDrafts(db);
          log.push('rerate');
        }
      }
      // settle: every draft posted, every period up to May billed, late usage on June's invoices
      await runBilling(db, { usage, now: new Date(end) });
      const { rows: drafts } = await db.query<{ id: string; org_id: number }>(
        "SELECT id, org_id FROM invoices WHERE status = 'DRAFT' AND subscription_id IS NOT NULL",
      );
      for (const draft of drafts) {
        await db.transaction((tx) => postDraft(tx, { invoiceId: draft.id, orgId: Number(draft.org_id) }));
      }
      await runBilling(db, { usage, now: new Date(monthStart(6) + 3 * DAY) });

      const problems: string[] = [];
      for (const sub of subscriptions) {
        for (let month = 0; month < 5; month++) {
          const { rows: counted } = await db.query<{ total: string }>(
            `SELECT coalesce(sum(quantity), 0)::numeric(38, 8)::text AS total FROM usage_events
            WHERE subscription_item_id = $1 AND voided_at IS NULL AND occurred_at >= $2 AND occurred_at < $3`,
            [sub.item, new Date(monthStart(month)), new Date(monthStart(month + 1))],
          );
          const { rows: billed } = await db.query<{ total: string; period_invoices: string }>(
            `SELECT coalesce(sum(ii.quantity) FILTER (
                    WHERE i.period_start = $2::date AND ii.description LIKE 'API calls (usage%'), 0)
                  + coalesce(sum(ii.quantity) FILTER (WHERE ii.description = $3), 0) AS total,
                  count(DISTINCT i.id) FILTER (WHERE i.period_start = $2::date) AS period_invoices
             FROM invoices i JOIN invoice_items ii ON ii.invoice_id = i.id
            WHERE i.subscription_id = $1 AND i.status <> 'WITHDRAWN'`,
            [
              sub.id,
              new Date(monthStart(month)).toISOString().slice(0, 10),
              `API calls: late usage, ${label(month)}`,
            ],
          );
          const want = formatMoney(parseMoney(counted[0]!.total));
          const got = formatMoney(parseMoney(billed[0]!.total));
          if (want !== got || Number(billed[0]!.period_invoices) !== 1) {
            problems.push(
              `subscription ${sub.id}, ${label(month)}: counted ${want}, billed ${got}, ${billed[0]!.period_invoices} invoices`,
            );
          }
        }
      }
      expect(problems, log.join('\n')).toEqual([]);
    },
    180_000,
  );
});
