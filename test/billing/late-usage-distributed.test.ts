import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource } from '../../libs/billing/index.js';
import { draftPolicy, UsageGuardrails } from '../../libs/guardrails/index.js';
import { setOrganizationSettings } from '../../libs/organizations/index.js';
import {
  type OpenedUsageAggregator,
  openUsageAggregator,
  PostgresUsageSink,
} from '../../libs/usage/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, freshKey, startUsageStack, type UsageStack } from '../usage/support.js';
import { basicCatalog, customerIn, subscribe } from './fixtures.js';

/**
 * Late usage in the distributed mode: events through ingest, Redis and Kafka; the sinks write
 * Postgres and ClickHouse; the run reads ClickHouse for periods and Postgres for what came late.
 * A late event is billed once on the next invoice, a redelivery of it changes nothing, and on a
 * grace draft a late event (through the guardrails' drafts policy) and a void (through the api)
 * re-rate it.
 */

const DAY = 86_400_000;
let stack: UsageStack;
let clickhouseUsage: OpenedUsageAggregator;
let org: TestOrg;

beforeAll(async () => {
  const clickhouseConfig = {
    CLICKHOUSE_URL: testServices().clickhouseUrl,
    CLICKHOUSE_DATABASE: uniqueName('late_usage'),
  };
  stack = await startUsageStack('redis+kafka', { sinks: true, env: clickhouseConfig });
  clickhouseUsage = await openUsageAggregator(
    { ...stack.api.config, ...clickhouseConfig },
    stack.api.platform.db,
  );
  org = await createTestOrg(stack.api.platform.db);
}, 60_000);
afterAll(async () => {
  await clickhouseUsage?.close();
  await stack?.close();
});

async function subscription(db: UsageStack['api']['platform']['db'], orgId: number) {
  const { seats, apiCalls } = await basicCatalog(db, orgId);
  const customerId = await customerIn(db, orgId, { state_province: 'AB' });
  const start = new Date(Math.floor((Date.now() - 40 * DAY) / DAY) * DAY);
  const created = await subscribe(
    db,
    orgId,
    { customer_id: customerId, items: [{ product_id: seats }, { product_id: apiCalls }], start_date: start },
    start,
  );
  return {
    ...created,
    start,
    periodEnd: new Date(created.current_period_end),
    metered: created.items.find((item) => item.usage_type === 'metered')!.id,
  };
}

describe('late usage, distributed', () => {
  const send = (key: string, item: number, quantity: number, at: Date) =>
    stack.frontEnds
      .find((f) => f.name === 'uws')!
      .post('/usage/events', {
        key: org.apiKey,
        idempotencyKey: key,
        body: { subscription_item_id: item, quantity, timestamp: at.toISOString() },
      });
  const inPostgres = (item: number, count: number) =>
    eventually(async () => {
      const { rows } = await stack.api.platform.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM usage_events WHERE subscription_item_id = $1',
        [item],
      );
      expect(rows[0]!.n).toBe(count);
    });

  it('bills a late event once on the next invoice, whatever the redeliveries', async () => {
    const db = stack.api.platform.db;
    const sub = await subscription(db, org.orgId);
    expect((await send(freshKey(), sub.metered, 60, new Date(sub.start.getTime() + DAY))).status).toBe(201);
    await inPostgres(sub.metered, 1);
    await clickhouseUsage.caughtUp();
    const options = { usage: usageSource(clickhouseUsage.aggregator), orgId: org.orgId };
    const first = await runBilling(db, { ...options, now: new Date(sub.periodEnd.getTime() + 1000) });
    expect(first.invoice_ids).toHaveLength(1);

    const lateKey = freshKey('late');
    expect((await send(lateKey, sub.metered, 50, new Date(sub.periodEnd.getTime() - 1))).status).toBe(201);
    await inPostgres(sub.metered, 2);
    // Kafka redelivers it to the Postgres sink
    const { rows } = await db.query<{ id: string; recorded_at: Date }>(
      'SELECT id, recorded_at FROM usage_events WHERE idempotency_key = $1',
      [lateKey],
    );
    await new PostgresUsageSink(db).write([
      {
        id: rows[0]!.id,
        orgId: org.orgId,
        subscriptionItemId: sub.metered,
        idempotencyKey: lateKey,
        quantity: '50',
        occurredAtMs: sub.periodEnd.getTime() - 1,
        recordedAtMs: rows[0]!.recorded_at.getTime(),
      },
    ]);
    await clickhouseUsage.caughtUp();
    const nextEnd = new Date(sub.periodEnd.getTime() + 40 * DAY);
    const second = await runBilling(db, { ...options, now: nextEnd });
    const { rows: late } = await db.query<{ description: string; quantity: string; amount: string }>(
      `SELECT description, quantity::text AS quantity, line_total_pre_tax::text AS amount FROM invoice_items
        WHERE invoice_id = ANY($1::uuid[]) AND description LIKE '%late usage%'`,
      [second.invoice_ids],
    );
    // price(110) - price(60) = (100 + 10 x 0.50) - 60
    expect(late).toEqual([expect.objectContaining({ quantity: '50.0000', amount: '45.00000000' })]);
    expect(late[0]!.description).toMatch(/^API calls: late usage, /);
    await runBilling(db, { ...options, now: nextEnd });
    const { rows: all } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM invoice_items ii JOIN invoices i ON i.id = ii.invoice_id
        WHERE i.subscription_id = $1 AND ii.description LIKE '%late usage%'`,
      [sub.id],
    );
    expect(all[0]!.n).toBe(1);
  }, 60_000);

  it('re-rates a grace draft when a late event arrives and when the api voids one of its events', async () => {
    const db = stack.api.platform.db;
    const graceOrg = await createTestOrg(db);
    await setOrganizationSettings(db, graceOrg.orgId, { invoiceGraceHours: 72 });
    const sub = await subscription(db, graceOrg.orgId);
    const post = (key: string, quantity: number, at: Date) =>
      stack.frontEnds
        .find((f) => f.name === 'api')!
        .post('/usage/events', {
          key: graceOrg.apiKey,
          idempotencyKey: key,
          body: { subscription_item_id: sub.metered, quantity, timestamp: at.toISOString() },
        });
    const firstKey = freshKey('g');
    expect((await post(firstKey, 30, new Date(sub.start.getTime() + DAY))).status).toBe(201);
    await inPostgres(sub.metered, 1);
    await clickhouseUsage.caughtUp();
    const run = await runBilling(db, {
      usage: usageSource(clickhouseUsage.aggregator),
      orgId: graceOrg.orgId,
      now: new Date(sub.periodEnd.getTime() + 1000),
    });
    const draftId = run.invoice_ids[0]!;
    const subtotal = async () =>
      (
        await db.query<{ subtotal: string; status: string }>(
          'SELECT subtotal::text AS subtotal, status FROM invoices WHERE id = $1',
          [draftId],
        )
      ).rows[0]!;
    expect(await subtotal()).toEqual({ subtotal: '40.00000000', status: 'DRAFT' });

    const lateKey = freshKey('g');
    expect((await post(lateKey, 5, new Date(sub.start.getTime() + 2 * DAY))).status).toBe(201);
    await inPostgres(sub.metered, 2);
    // the sinks process's guardrails group hands it to the drafts policy once the read-back counts it
    const guardrails = new UsageGuardrails({ db, log: runLogger('guardrails'), policies: [draftPolicy(db)] });
    guardrails.attach(stack.api.usage.readStores);
    const { rows: late } = await db.query<{ id: string; occurred_at: Date; recorded_at: Date }>(
      'SELECT id, occurred_at, recorded_at FROM usage_events WHERE idempotency_key = $1',
      [lateKey],
    );
    await guardrails.sink('evaluated').write([
      {
        id: late[0]!.id,
        orgId: graceOrg.orgId,
        subscriptionItemId: sub.metered,
        idempotencyKey: lateKey,
        quantity: '5',
        occurredAtMs: late[0]!.occurred_at.getTime(),
        recordedAtMs: late[0]!.recorded_at.getTime(),
      },
    ]);
    await guardrails.stop();
    expect(await subtotal()).toEqual({ subtotal: '45.00000000', status: 'DRAFT' });

    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM usage_events WHERE idempotency_key = $1',
      [firstKey],
    );
    const voided = await stack.api.request({
      method: 'POST',
      path: `/usage/events/${rows[0]!.id}/void`,
      key: graceOrg.apiKey,
    });
    expect(voided.statusCode, voided.body).toBe(200);
    expect(await subtotal()).toEqual({ subtotal: '15.00000000', status: 'DRAFT' });
  }, 60_000);
});
