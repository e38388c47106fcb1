import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, usageSource } from '../../libs/billing/index.js';
import { openClickHouse } from '../../libs/clickhouse/index.js';
import { DependencyUnavailableError } from '../../libs/dependency-guard/index.js';
import {
  ClickHouseUsageAggregator,
  ClickHouseUsageSink,
  migrateClickHouse,
  openUsageAggregator,
  startUsageSinks,
  type UsageEventRecord,
  type UsageSinks,
} from '../../libs/usage/index.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, freshKey, startUsageStack, type UsageStack } from './support.js';

/**
 * The usage read-back in the distributed mode: events through ingest to Kafka (the test broker),
 * the sinks to Postgres and ClickHouse; the read-back's totals from Postgres' daily totals (the
 * pg-sink's), the billing run's from ClickHouse; `as_of` the pg-sink's watermark.
 * Voids travel the same log; a void racing its event still in flight wins.
 */

const DAY = 86_400_000;
let stack: UsageStack;
let sinks: UsageSinks | undefined;
let clickhouseConfig: { CLICKHOUSE_URL: string; CLICKHOUSE_DATABASE: string };
let org: TestOrg;
let other: TestOrg;
let subscriptionId: number;
let metered: number;
let start: Date;
let periodStart: string;

const startSinks = async (flushMs = 50) =>
  startUsageSinks({
    config: { ...stack.api.config, SINK_FLUSH_MS: flushMs },
    db: stack.api.platform.db,
    log: runLogger('sinks'),
  });

beforeAll(async () => {
  clickhouseConfig = {
    CLICKHOUSE_URL: testServices().clickhouseUrl,
    CLICKHOUSE_DATABASE: uniqueName('read_back'),
  };
  stack = await startUsageStack('redis+kafka', { env: clickhouseConfig });
  sinks = await startSinks();
  const db = stack.api.platform.db;
  org = await createTestOrg(db);
  other = await createTestOrg(db);
  const { seats, apiCalls } = await basicCatalog(db, org.orgId);
  const customerId = await customerIn(db, org.orgId, { country: 'US', state_province: 'NY' } as never);
  // the first period ended ten days ago; the run has not billed it yet
  start = new Date(Math.floor((Date.now() - 40 * DAY) / 1000) * 1000);
  const subscription = await subscribe(
    db,
    org.orgId,
    {
      customer_id: customerId,
      items: [{ product_id: seats }, { product_id: apiCalls, included_units: '5' }],
      start_date: start,
    },
    start,
  );
  subscriptionId = subscription.id;
  periodStart = subscription.current_period_start;
  metered = subscription.items.find((item) => item.usage_type === 'metered')!.id;
}, 120_000);
afterAll(async () => {
  await sinks?.stop();
  await stack?.close();
});

const ingest = () => stack.frontEnds.find((f) => f.name === 'uws')!;

async function post(quantity: number, at: Date): Promise<{ id: string; answeredAt: number }> {
  const response = await ingest().post('/usage/events', {
    key: org.apiKey,
    idempotencyKey: freshKey('read-back'),
    body: { subscription_item_id: metered, quantity, timestamp: at.toISOString() },
  });
  expect(response.status).toBe(201);
  return { id: (response.body as { data: { id: string } }).data.id, answeredAt: Date.now() };
}

const get = (path: string, key = org.apiKey) => stack.api.request({ method: 'GET', path, key });
const voidEvent = (id: string, key = org.apiKey) =>
  stack.api.request({ method: 'POST', path: `/usage/events/${id}/void`, key });

async function clickhouseRow(id: string) {
  const clickhouse = openClickHouse({
    url: clickhouseConfig.CLICKHOUSE_URL,
    database: clickhouseConfig.CLICKHOUSE_DATABASE,
  });
  try {
    return await clickhouse.rows<{ voided: number }>(
      `SELECT voided FROM ${clickhouseConfig.CLICKHOUSE_DATABASE}.usage_events FINAL WHERE id = toUUID('${id}')`,
    );
  } finally {
    await clickhouse.close();
  }
}

const inPeriod = (days: number) => new Date(start.getTime() + days * DAY);

describe('usage read-back, distributed mode', () => {
  const posted: { id: string; answeredAt: number }[] = [];

  it('counts every event answered 201 before as_of', async () => {
    for (const [i, quantity] of [3, 7.25, 11, 0.5, 100].entries())
      posted.push(await post(quantity, inPeriod(i + 1)));
    const lastAnswer = Math.max(...posted.map((p) => p.answeredAt));
    const usage = await eventually(async () => {
      const response = await get(`/subscriptions/${subscriptionId}/usage`);
      expect(response.statusCode, response.body).toBe(200);
      const data = response.json().data;
      expect(Date.parse(data.as_of)).toBeGreaterThan(lastAnswer);
      return data;
    });
    // as_of vouches for them: the total read after it holds every one
    expect(usage.items[0]).toMatchObject({ quantity: '121.75000000', billable_quantity: '116.75000000' });
    expect(usage.lag_seconds).toBeLessThan(5);
    // the run has not billed the first period yet: it is still the subscription's current one
    expect(usage.period_start).toBe(periodStart);
  });

  it('voids through the log: both stores drop the event; usage, daily and the billing run agree', async () => {
    const target = posted[4]!; // 100
    const response = await voidEvent(target.id);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toMatchObject({ id: target.id, status: 'VOIDED' });
    expect((await voidEvent(target.id)).json().data).toEqual(response.json().data);

    await eventually(async () => {
      expect(await clickhouseRow(target.id)).toEqual([{ voided: 1 }]);
      const usage = (await get(`/subscriptions/${subscriptionId}/usage`)).json().data;
      expect(usage.items[0].quantity).toBe('21.75000000');
    });
    const { rows } = await stack.api.platform.db.query('SELECT voided_at FROM usage_events WHERE id = $1', [
      target.id,
    ]);
    expect(rows[0]!.voided_at).not.toBeNull();
    const day = new Date(inPeriod(5)).toISOString().slice(0, 10);
    const daily = await get(`/subscriptions/${subscriptionId}/usage/daily?from=${day}&to=${day}`);
    expect(daily.json().data).toEqual([{ date: day, subscription_item_id: metered, quantity: '0.00000000' }]);

    const upcoming = (await get(`/subscriptions/${subscriptionId}/upcoming-invoice`)).json().data;
    const clickhouse = openClickHouse({
      url: clickhouseConfig.CLICKHOUSE_URL,
      database: clickhouseConfig.CLICKHOUSE_DATABASE,
    });
    try {
      const summary = await runBilling(stack.api.platform.db, {
        usage: usageSource(new ClickHouseUsageAggregator(clickhouse)),
        orgId: org.orgId,
        subscriptionIds: [subscriptionId],
      });
      expect(summary.invoices_created).toBe(1);
      const { rows: invoices } = await stack.api.platform.db.query(
        'SELECT subtotal::text, tax_amount::text, total::text, invoice_number FROM invoices WHERE id = $1',
        [summary.invoice_ids[0]],
      );
      // the preview taken before the run is the run's invoice: the void counts in neither
      expect([invoices[0]!.subtotal, invoices[0]!.tax_amount, invoices[0]!.total]).toEqual([
        upcoming.subtotal,
        upcoming.tax,
        upcoming.total,
      ]);
      expect(upcoming.lines[1].quantity).toBe('16.7500'); // 21.75 - 5 included
      const refused = await voidEvent(posted[0]!.id);
      expect(refused.statusCode).toBe(409);
      expect(refused.body).toContain(invoices[0]!.invoice_number);
    } finally {
      await clickhouse.close();
    }
  });

  it('a void racing its event still in flight wins, in both stores', async () => {
    // Sinks that hold what they read for 2 s before writing it: an accepted event stays out of
    // every store long enough for its void to arrive first.
    await sinks!.stop();
    sinks = await startSinks(2000);
    const event = await post(42, new Date());
    const { rows: before } = await stack.api.platform.db.query('SELECT 1 FROM usage_events WHERE id = $1', [
      event.id,
    ]);
    expect(before).toEqual([]);
    const response = await voidEvent(event.id);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toMatchObject({ id: event.id, status: 'VOIDED' });
    await eventually(async () => {
      expect(await clickhouseRow(event.id)).toEqual([{ voided: 1 }]);
      const usage = (await get(`/subscriptions/${subscriptionId}/usage`)).json().data;
      expect(Date.parse(usage.as_of)).toBeGreaterThan(event.answeredAt);
      expect(usage.items[0].quantity).toBe('0.00000000');
    }, 30_000);
    const { rows } = await stack.api.platform.db.query('SELECT voided_at FROM usage_events WHERE id = $1', [
      event.id,
    ]);
    expect(rows[0]!.voided_at).not.toBeNull();
  }, 60_000);

  it('keeps a void in ClickHouse whatever order the void and its event are written in', async () => {
    const clickhouse = openClickHouse({
      url: clickhouseConfig.CLICKHOUSE_URL,
      database: clickhouseConfig.CLICKHOUSE_DATABASE,
    });
    try {
      const sink = new ClickHouseUsageSink(clickhouse);
      const event: UsageEventRecord = {
        id: crypto.randomUUID(),
        orgId: other.orgId,
        subscriptionItemId: 777,
        idempotencyKey: freshKey('order'),
        quantity: '5',
        occurredAtMs: Date.now(),
        recordedAtMs: Date.now(),
      };
      await sink.writeVoids([{ event, voidedAtMs: Date.now() }]);
      await sink.write([event]); // a redelivery after the void
      await sink.writeVoids([{ event, voidedAtMs: Date.now() }]); // and the void again
      const totals = await new ClickHouseUsageAggregator(clickhouse).totals(
        other.orgId,
        [777],
        new Date(Date.now() - DAY),
        new Date(Date.now() + DAY),
      );
      expect(totals.get(777)).toBe('0.00000000');
      // the schema change applies again to the table as it is now, changing nothing
      await migrateClickHouse(clickhouse);
    } finally {
      await clickhouse.close();
    }
  });

  it('totals in ClickHouse the events of [from, to) to the millisecond, bounds off whole seconds', async () => {
    const clickhouse = openClickHouse({
      url: clickhouseConfig.CLICKHOUSE_URL,
      database: clickhouseConfig.CLICKHOUSE_DATABASE,
    });
    try {
      const base = Math.floor(Date.now() / 1000) * 1000 - DAY;
      const from = base + 500;
      const to = base + 3_600_000 + 250;
      const at = (occurredAtMs: number, quantity: string): UsageEventRecord => ({
        id: crypto.randomUUID(),
        orgId: other.orgId,
        subscriptionItemId: 778,
        idempotencyKey: freshKey('bounds'),
        quantity,
        occurredAtMs,
        recordedAtMs: Date.now(),
      });
      await new ClickHouseUsageSink(clickhouse).write([
        at(from - 1, '1000'), // the same second as `from`, a millisecond before it: out
        at(from, '0.00000001'), // `from` itself: in
        at(to - 1, '0.12345678'), // the same second as `to`, a millisecond before it: in
        at(to, '300'), // `to` itself: out
      ]);
      const totals = await new ClickHouseUsageAggregator(clickhouse).totals(
        other.orgId,
        [778],
        new Date(from),
        new Date(to),
      );
      expect(totals.get(778)).toBe('0.12345679');
    } finally {
      await clickhouse.close();
    }
  });

  it("answers 404 for another organization's subscription or event", async () => {
    for (const path of [
      `/subscriptions/${subscriptionId}/usage`,
      `/subscriptions/${subscriptionId}/usage/daily`,
      `/subscriptions/${subscriptionId}/upcoming-invoice`,
      `/usage/events/${posted[0]!.id}`,
    ]) {
      expect((await get(path, other.apiKey)).statusCode, path).toBe(404);
    }
    expect((await voidEvent(posted[1]!.id, other.apiKey)).statusCode).toBe(404);
  });

  it('answers a void of an event it cannot find 503 while the pg-sink is behind, 404 once caught up', async () => {
    // an event answered 201 may not be in Postgres yet: "not found" is only true once the sink has
    // written everything accepted (docs/architecture.md, "A usage event's way")
    const unknown = crypto.randomUUID();
    await sinks!.stop();
    try {
      await post(1, new Date());
      const behind = await voidEvent(unknown);
      expect(behind.statusCode, behind.body).toBe(503);
      expect(behind.json()).toMatchObject({ error_code: 'SERVICE_UNAVAILABLE' });
      expect(Number(behind.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      sinks = await startSinks();
    }
    await eventually(async () => {
      const response = await voidEvent(unknown);
      expect(response.statusCode, response.body).toBe(404);
    }, 30_000);
  }, 60_000);
});

describe('a ClickHouse that is down', () => {
  let down: TestApi;
  let downOrg: TestOrg;
  let downSubscription: number;

  beforeAll(async () => {
    down = await startTestApi({
      env: {
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        KAFKA_USAGE_TOPIC: uniqueName('usage_down'),
        CLICKHOUSE_URL: 'http://127.0.0.1:1',
      },
    });
    downOrg = await createTestOrg(down.platform.db);
    const { apiCalls } = await basicCatalog(down.platform.db, downOrg.orgId);
    const customerId = await customerIn(down.platform.db, downOrg.orgId);
    downSubscription = (
      await subscribe(down.platform.db, downOrg.orgId, {
        customer_id: customerId,
        items: [{ product_id: apiCalls }],
      })
    ).id;
  }, 60_000);
  afterAll(() => down?.close());

  it('fails a billing run at once (DependencyUnavailableError, a 503 on any route), and the read-back still answers', async () => {
    const usage = await openUsageAggregator(down.config, down.platform.db);
    try {
      const started = Date.now();
      // the refused connection itself: an outage, so the guard now knows ClickHouse is down
      await expect(usage.aggregator.totals(downOrg.orgId, [1], new Date(0), new Date())).rejects.toThrow(
        /ECONNREFUSED/,
      );
      // known down now: refused at once, without waiting for a connection
      const again = Date.now();
      await expect(
        usage.aggregator.totals(downOrg.orgId, [1], new Date(0), new Date()),
      ).rejects.toBeInstanceOf(DependencyUnavailableError);
      expect(Date.now() - again).toBeLessThan(100);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await usage.close();
    }
    // the read-back's totals are Postgres' daily totals: ClickHouse down changes nothing for it
    for (const path of [
      `/subscriptions/${downSubscription}/usage`,
      `/subscriptions/${downSubscription}/usage/daily`,
      `/subscriptions/${downSubscription}/upcoming-invoice`,
    ]) {
      const response = await down.request({ method: 'GET', path, key: downOrg.apiKey });
      expect(response.statusCode, `${path}: ${response.body}`).toBe(200);
    }
  });
});
