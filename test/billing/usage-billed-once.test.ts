import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource } from '../../libs/billing/index.js';
import { openClickHouse } from '../../libs/clickhouse/index.js';
import { getInvoice } from '../../libs/invoices/index.js';
import {
  ClickHouseUsageSink,
  type OpenedUsageAggregator,
  openUsageAggregator,
  PostgresUsageAggregator,
  PostgresUsageSink,
  SinkBehindError,
  startUsageSinks,
  type UsageEventRecord,
} from '../../libs/usage/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, freshKey, startUsageStack, type UsageStack } from '../usage/support.js';
import { basicCatalog, customerIn, invoicesOf, subscribe } from './fixtures.js';

/**
 * Issue 5: usage sent through the ingest pipeline is billed exactly once. Events go through both
 * HTTP front ends of the ingest core, with retries and concurrent duplicates, to Kafka (the test
 * broker); the sinks copy them to Postgres and ClickHouse; the billing run reads ClickHouse, as
 * in the distributed mode. Redelivered batches and a second run change nothing.
 */

const DAY = 86_400_000;
let stack: UsageStack;
let clickhouseConfig: { CLICKHOUSE_URL: string; CLICKHOUSE_DATABASE: string };
let clickhouseUsage: OpenedUsageAggregator;
let org: TestOrg;

beforeAll(async () => {
  clickhouseConfig = {
    CLICKHOUSE_URL: testServices().clickhouseUrl,
    CLICKHOUSE_DATABASE: uniqueName('billing_usage'),
  };
  stack = await startUsageStack('redis+kafka', { sinks: true, env: clickhouseConfig });
  clickhouseUsage = await openUsageAggregator(
    { ...stack.api.config, ...clickhouseConfig },
    stack.api.platform.db,
  );
  org = await createTestOrg(stack.api.platform.db);
});
afterAll(async () => {
  await clickhouseUsage?.close();
  await stack?.close();
});

describe('usage through the ingest pipeline', () => {
  it('is billed exactly once, from ClickHouse, whatever the retries, duplicates and redeliveries', async () => {
    const db = stack.api.platform.db;
    const { seats, apiCalls } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId, { state_province: 'AB' }); // GST 5 %
    const start = new Date(Math.floor((Date.now() - 40 * DAY) / 1000) * 1000);
    const subscription = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: apiCalls, included_units: '50' }],
        start_date: start,
      },
      start,
    );
    const metered = subscription.items.find((item) => item.usage_type === 'metered')!.id;
    const periodEnd = new Date(subscription.current_period_end);

    const [uws, api] = (['uws', 'api'] as const).map((name) => stack.frontEnds.find((f) => f.name === name)!);
    const send = (frontEnd: typeof uws, key: string, quantity: number, at: Date) =>
      frontEnd!.post('/usage/events', {
        key: org.apiKey,
        idempotencyKey: key,
        body: { subscription_item_id: metered, quantity, timestamp: at.toISOString() },
      });
    const events = [10, 20, 30, 40, 150.5].map((quantity, i) => ({
      key: freshKey('billed-once'),
      quantity,
      at: new Date(start.getTime() + (i + 1) * DAY),
    }));
    for (const event of events) {
      // the client's retry through the other front end, and a burst of concurrent duplicates
      expect((await send(uws, event.key, event.quantity, event.at)).status).toBe(201);
      expect((await send(api, event.key, event.quantity, event.at)).status).toBe(201);
    }
    const burst = await Promise.all(
      Array.from({ length: 6 }, (_, i) => send(i % 2 ? uws : api, events[0]!.key, 10, events[0]!.at)),
    );
    expect(burst.map((r) => r.status)).toEqual(Array(6).fill(201));
    // the last instant of the period is in it; its end belongs to the next period
    const lastInstant = { key: freshKey('edge'), quantity: 1, at: new Date(periodEnd.getTime() - 1) };
    const nextPeriod = { key: freshKey('next'), quantity: 1000, at: periodEnd };
    for (const event of [lastInstant, nextPeriod]) {
      expect((await send(api, event.key, event.quantity, event.at)).status).toBe(201);
    }

    // both sinks caught up: 7 distinct events in Postgres, and ClickHouse agrees on the period
    const period = [start, periodEnd] as const;
    await eventually(async () => {
      const { rows } = await db.query('SELECT count(*)::int AS n FROM usage_events WHERE org_id = $1', [
        org.orgId,
      ]);
      expect(rows[0]!.n).toBe(7);
      const totals = await clickhouseUsage.aggregator.totals(org.orgId, [metered], ...period);
      expect(totals.get(metered)).toBe('251.50000000');
    });
    const postgresTotals = await new PostgresUsageAggregator(db).totals(org.orgId, [metered], ...period);
    expect(postgresTotals.get(metered)).toBe('251.50000000');

    // Kafka redelivers a batch after a crash: both sinks see the same events again
    const { rows: stored } = await db.query<{
      id: string;
      idempotency_key: string;
      quantity: string;
      occurred_at: Date;
      recorded_at: Date;
    }>(
      'SELECT id, idempotency_key, quantity::text AS quantity, occurred_at, recorded_at FROM usage_events WHERE org_id = $1',
      [org.orgId],
    );
    const redelivered: UsageEventRecord[] = stored.map((row) => ({
      id: row.id,
      orgId: org.orgId,
      subscriptionItemId: metered,
      idempotencyKey: row.idempotency_key,
      quantity: row.quantity,
      occurredAtMs: row.occurred_at.getTime(),
      recordedAtMs: row.recorded_at.getTime(),
    }));
    const clickhouse = openClickHouse({
      url: clickhouseConfig.CLICKHOUSE_URL,
      database: clickhouseConfig.CLICKHOUSE_DATABASE,
    });
    try {
      await new ClickHouseUsageSink(clickhouse).write(redelivered);
    } finally {
      await clickhouse.close();
    }
    await new PostgresUsageSink(db).write(redelivered);

    const options = {
      usage: usageSource(clickhouseUsage.aggregator),
      orgId: org.orgId,
      now: new Date(periodEnd.getTime() + 1000),
    };
    const run = await runBilling(db, options);
    expect(run.invoices_created).toBe(1);
    const invoice = await getInvoice(db, org.orgId, run.invoice_ids[0]!);
    const usageLine = invoice.items.find((item) => item.product_id === apiCalls)!;
    // 251.5 used - 50 included = 201.5 calls: 100 x 1.00 + 101.5 x 0.50 = 150.75
    expect(usageLine).toMatchObject({
      description: 'API calls (usage: 251.5 calls, 50 included)',
      quantity: '201.5000',
      line_total_pre_tax: '150.75000000',
    });
    // seats 10.00 + usage 150.75 = 160.75, GST 5 % = 8.0375 -> 8.04 (half-up to the cent)
    expect(invoice).toMatchObject({ total: '168.79000000', tax_amount: '8.04000000' });

    expect((await runBilling(db, options)).invoices_created).toBe(0);
    expect(await invoicesOf(db, subscription.id)).toHaveLength(1);
  });

  it('waits for the sink it reads before billing, and fails rather than leave accepted usage out', async () => {
    const db = stack.api.platform.db;
    const { apiCalls } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId, { state_province: 'AB' });
    const start = new Date(Math.floor((Date.now() - 40 * DAY) / 1000) * 1000);
    const subscription = await subscribe(
      db,
      org.orgId,
      { customer_id: customerId, items: [{ product_id: apiCalls }], start_date: start },
      start,
    );
    const metered = subscription.items[0]!.id;
    const period = [start, new Date(subscription.current_period_end)] as const;

    // The sinks are down: the event is accepted (durable in Kafka) but not in ClickHouse yet.
    await stack.sinks!.stop();
    const accepted = await stack.frontEnds[0]!.post('/usage/events', {
      key: org.apiKey,
      idempotencyKey: freshKey('behind'),
      body: {
        subscription_item_id: metered,
        quantity: 7,
        timestamp: new Date(start.getTime() + DAY).toISOString(),
      },
    });
    expect(accepted.status).toBe(201);
    const behind = await clickhouseUsage.caughtUp({ timeoutMs: 1000 }).catch((error: unknown) => error);
    expect(behind).toBeInstanceOf(SinkBehindError);
    expect((behind as SinkBehindError).groupId).toBe(`${stack.topic}-ch-sink`);
    expect((behind as Error).message).toMatch(/message\(s\) of .* still to write .*nothing was billed/);
    expect((await clickhouseUsage.aggregator.totals(org.orgId, [metered], ...period)).get(metered)).toBe(
      '0.00000000',
    );

    // Back up: once caught up, the totals hold the event at once, with no polling.
    const sinks = await startUsageSinks({
      config: { ...stack.api.config, ...clickhouseConfig, SINK_FLUSH_MS: 50 },
      db,
      log: runLogger('sinks'),
    });
    try {
      await clickhouseUsage.caughtUp({ timeoutMs: 30_000 });
      expect((await clickhouseUsage.aggregator.totals(org.orgId, [metered], ...period)).get(metered)).toBe(
        '7.00000000',
      );
    } finally {
      await sinks.stop();
    }
  });
});
