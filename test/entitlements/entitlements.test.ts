import { afterEach, describe, expect, it } from 'vitest';
import type { Queryable } from '../../libs/db/index.js';
import { getEntitlement } from '../../libs/entitlements/index.js';
import { portalUsageSource } from '../../libs/portal/index.js';
import type { Entitlement } from '../../libs/schemas/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { cancelSubscription } from '../../libs/subscriptions/index.js';
import {
  openUsageIngest,
  startUsageSinks,
  type UsagePipeline,
  type UsageSinks,
} from '../../libs/usage/index.js';
import { buildApiApp } from '../../services/api/app.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { startKafkaTestBroker } from '../helpers/kafka-test-broker.js';
import { monitorRedis } from '../helpers/redis-monitor.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually } from '../usage/support.js';

/*
 * Entitlements on real services, in both modes: distributed (Redis counters, Kafka, the sinks into
 * Postgres) and embedded (the memory twin, the in-process log). `used` reads its own writes: every
 * event answered 201 before the check, without waiting for the sinks.
 */

type Mode = 'distributed' | 'embedded';
const MODES: Mode[] = ['distributed', 'embedded'];
const DAY = 86_400_000;

let api: TestApi | undefined;
let sinks: UsageSinks | undefined;
const extra: UsagePipeline[] = [];
const apps: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
  await sinks?.stop();
  for (const pipeline of extra.splice(0)) await pipeline.close();
  await api?.close();
  sinks = undefined;
  api = undefined;
});

async function start(mode: Mode): Promise<TestApi> {
  if (mode === 'embedded') {
    api = await startTestApi({ redis: false });
    return api;
  }
  const topic = uniqueName('usage');
  api = await startTestApi({
    env: {
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_USAGE_TOPIC: topic,
      KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
      // a rebuild waits this (plus linger) for events reserved before its cut
      KAFKA_ACK_TIMEOUT_MS: '1000',
    },
  });
  await startSinks();
  return api;
}

async function startSinks(): Promise<void> {
  sinks = await startUsageSinks({
    config: { ...api!.config, SINK_FLUSH_MS: 20 },
    db: api!.platform.db,
    log: runLogger('sinks'),
  });
}

interface Setup {
  org: TestOrg;
  customerId: number;
  apiCalls: number;
  seats: number;
  subscriptionId: number;
  item: number;
  seatItem: number;
}

/** A customer with seats and metered API calls (limit `limit`), its first period began `daysAgo` days ago. */
async function customer(
  testApi: TestApi,
  options: { limit?: string | null; daysAgo?: number } = {},
): Promise<Setup> {
  const db = testApi.platform.db;
  const org = await createTestOrg(db);
  const { seats, apiCalls } = await basicCatalog(db, org.orgId);
  const customerId = await customerIn(db, org.orgId);
  const now = new Date();
  const start = new Date(
    Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - (options.daysAgo ?? 0) * DAY,
  );
  const subscription = await subscribe(
    db,
    org.orgId,
    {
      customer_id: customerId,
      items: [
        { product_id: seats, quantity: 2 },
        { product_id: apiCalls, usage_limit: options.limit === undefined ? '10' : options.limit },
      ],
      start_date: start,
    },
    now,
  );
  return {
    org,
    customerId,
    apiCalls,
    seats,
    subscriptionId: subscription.id,
    seatItem: subscription.items[0]!.id,
    item: subscription.items[1]!.id,
  };
}

/** A second subscription of the customer, from today, to the metered product (limit `limit`): its item. */
async function anotherItemOfTheProduct(testApi: TestApi, s: Setup, limit: string): Promise<number> {
  const now = new Date();
  const other = await subscribe(
    testApi.platform.db,
    s.org.orgId,
    {
      customer_id: s.customerId,
      items: [{ product_id: s.apiCalls, usage_limit: limit }],
      start_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())),
    },
    now,
  );
  return other.items[0]!.id;
}

/**
 * The end of the subscription's stored period, and a check of its metered product at any instant:
 * for tests that check on both sides of that boundary.
 */
async function storedBoundary(testApi: TestApi, s: Setup) {
  const { rows } = await testApi.platform.db.query<{ current_period_end: Date }>(
    'SELECT current_period_end FROM subscriptions WHERE id = $1',
    [s.subscriptionId],
  );
  const at = (ms: number) =>
    getEntitlement(testApi.platform.db, testApi.usage.counter, s.org.orgId, s.customerId, s.apiCalls, {
      now: new Date(ms),
    });
  return { boundary: rows[0]!.current_period_end.getTime(), at };
}

async function post(
  testApi: TestApi,
  s: Setup,
  quantity: number | string,
  options: { key?: string; at?: Date } = {},
) {
  const response = await testApi.request({
    method: 'POST',
    path: '/usage/events',
    key: s.org.apiKey,
    payload: {
      subscription_item_id: s.item,
      quantity: Number(quantity),
      ...(options.at ? { timestamp: options.at.toISOString() } : {}),
    },
    headers: { 'idempotency-key': options.key ?? uniqueName('key') },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json();
}

async function check(testApi: TestApi, s: Setup, productId = s.apiCalls): Promise<Entitlement> {
  const response = await testApi.request({
    method: 'GET',
    path: `/customers/${s.customerId}/entitlements/${productId}`,
    key: s.org.apiKey,
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json().data;
}

/** What Postgres holds for the item's events in [from, to) once the sinks caught up: the truth. */
async function stored(testApi: TestApi, item: number, from: Date, to: Date): Promise<string> {
  expect(await testApi.usage.readStores.eventsCaughtUp(20_000)).toBe(true);
  const { rows } = await testApi.platform.db.query<{ total: string }>(
    `SELECT coalesce(sum(quantity), 0)::numeric(38, 8)::text AS total FROM usage_events
      WHERE subscription_item_id = $1 AND occurred_at >= $2 AND occurred_at < $3 AND voided_at IS NULL`,
    [item, from, to],
  );
  return rows[0]!.total;
}

/** Drops the item's counters, as an eviction or a Redis restart would (embedded: a process restart). */
async function loseCounters(testApi: TestApi, s: Setup, mode: Mode): Promise<UsagePipeline | undefined> {
  if (mode === 'embedded') {
    const restarted = await openUsageIngest(testApi.platform);
    extra.push(restarted);
    return restarted;
  }
  const redis = testApi.platform.redis!;
  const keys = await redis.keys(`${testApi.config.REDIS_KEY_PREFIX}usage:counter:${s.org.orgId}:${s.item}:*`);
  expect(keys.length).toBeGreaterThan(0);
  await redis.del(...keys);
  return undefined;
}

describe.each(MODES)('entitlements (%s)', (mode) => {
  it('reads its own writes right after the 201, without the sinks; duplicates and batches count once', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '100' });
    // the first check builds the counter (nothing stored yet), and the next period's in the background
    const first = await check(testApi, s);
    expect(first).toMatchObject({ used: '0.00000000', has_access: true, remaining: '100.00000000' });
    const next = {
      orgId: s.org.orgId,
      subscriptionItemId: s.item,
      startMs: Date.parse(first.period_end),
      endMs: Date.parse(first.period_end) + 28 * DAY,
    };
    await eventually(async () => expect(await testApi.usage.counter.isBuilt(next)).toBe(true), 20_000);
    // the sinks stop: from here on only the counter knows
    if (mode === 'distributed') {
      await sinks!.stop();
      sinks = undefined;
    }
    await post(testApi, s, 2.5, { key: 'first' });
    expect((await check(testApi, s)).used).toBe('2.50000000');
    // a retried key counts once, also after other events
    await post(testApi, s, 2.5, { key: 'first' });
    await post(testApi, s, 1);
    await post(testApi, s, 2.5, { key: 'first' });
    expect((await check(testApi, s)).used).toBe('3.50000000');
    // a batch: three new events, one repeated inside it, one repeating an earlier key
    const batch = await testApi.request({
      method: 'POST',
      path: '/usage/events/batch',
      key: s.org.apiKey,
      payload: {
        events: [
          { subscription_item_id: s.item, quantity: 1, idempotency_key: 'b1' },
          { subscription_item_id: s.item, quantity: 0.25, idempotency_key: 'b2' },
          { subscription_item_id: s.item, quantity: 1, idempotency_key: 'b1' },
          { subscription_item_id: s.item, quantity: 3, idempotency_key: 'b3' },
        ],
      },
    });
    expect(batch.statusCode, batch.body).toBeLessThan(300);
    const after = await check(testApi, s);
    expect(after).toMatchObject({ used: '7.75000000', remaining: '92.25000000', has_access: true });
    // an event dated in the next period counts there, in the counter built ahead, not in this one
    await post(testApi, s, 4, { at: new Date(next.startMs) });
    expect((await check(testApi, s)).used).toBe('7.75000000');
    expect((await testApi.usage.counter.used([next])).map(String)).toEqual(['400000000']);
    if (mode === 'distributed') await startSinks();
    const period = {
      from: new Date(Date.parse(after.period_end) - 40 * DAY),
      to: new Date(after.period_end),
    };
    expect(await stored(testApi, s.item, period.from, period.to)).toBe('7.75000000');
    expect(await stored(testApi, s.item, new Date(next.startMs), new Date(next.startMs + 1))).toBe(
      '4.00000000',
    );
  });

  it('the limit reached exactly takes access away; a void gives it back; a canceled subscription has none', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '10' });
    const events = [];
    for (const quantity of [4, 5.5]) events.push(await post(testApi, s, quantity));
    expect(await check(testApi, s)).toMatchObject({
      used: '9.50000000',
      remaining: '0.50000000',
      has_access: true,
    });
    const last = await post(testApi, s, 0.5);
    expect(await check(testApi, s)).toMatchObject({
      used: '10.00000000',
      usage_limit: '10.00000000',
      remaining: '0.00000000',
      has_access: false,
    });
    await post(testApi, s, 1);
    expect(await check(testApi, s)).toMatchObject({
      used: '11.00000000',
      remaining: '0.00000000',
      has_access: false,
    });
    // voids: each takes its event off once (a second void of the same event changes nothing)
    for (const event of [events[1], events[1], last]) {
      const voided = await testApi.request({
        method: 'POST',
        path: `/usage/events/${event.data.id}/void`,
        key: s.org.apiKey,
      });
      expect(voided.statusCode, voided.body).toBe(200);
    }
    expect(await check(testApi, s)).toMatchObject({
      used: '5.00000000',
      remaining: '5.00000000',
      has_access: true,
    });

    // the licensed item: access while the subscription runs, no usage
    expect(await check(testApi, s, s.seats)).toMatchObject({
      subscription_item_id: s.seatItem,
      has_access: true,
      usage_limit: null,
      remaining: null,
      used: '0.00000000',
    });
    // listed together, each item shows its own usage: the licensed one none, the metered one its own
    const running = await testApi.request({
      method: 'GET',
      path: `/customers/${s.customerId}/entitlements`,
      key: s.org.apiKey,
    });
    expect(running.statusCode, running.body).toBe(200);
    expect(
      running
        .json()
        .data.map((e: Entitlement) => [e.subscription_item_id, e.used, e.remaining, e.has_access]),
    ).toEqual([
      [s.seatItem, '0.00000000', null, true],
      [s.item, '5.00000000', '5.00000000', true],
    ]);
    await testApi.platform.db.transaction((tx) =>
      cancelSubscription(tx, { subscriptionId: s.subscriptionId, orgId: s.org.orgId }),
    );
    const listed = await testApi.request({
      method: 'GET',
      path: `/customers/${s.customerId}/entitlements`,
      key: s.org.apiKey,
    });
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.map((e: Entitlement) => [e.subscription_item_id, e.has_access])).toEqual([
      [s.seatItem, false],
      [s.item, false],
    ]);
  });

  it('a limit of 0 allows nothing: no access before any usage, nothing remaining', async () => {
    // 0 is a limit, not "none": used 0 is already used == limit
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '0' });
    expect(await check(testApi, s)).toMatchObject({
      used: '0.00000000',
      usage_limit: '0.00000000',
      remaining: '0.00000000',
      has_access: false,
    });
  });

  it('another organization’s customer, an unknown customer or product: 404', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi);
    const other = await customer(testApi);
    for (const path of [
      `/customers/${other.customerId}/entitlements`,
      `/customers/${other.customerId}/entitlements/${other.apiCalls}`,
      `/customers/${s.customerId}/entitlements/${other.apiCalls}`,
      `/customers/999999999/entitlements`,
      `/customers/abc/entitlements/${s.apiCalls}`,
    ]) {
      const response = await testApi.request({ method: 'GET', path, key: s.org.apiKey });
      expect(response.statusCode, path).toBe(404);
      expect(response.json().error_code).toBe('NOT_FOUND');
    }
  });

  it('a customer of the organization with no subscription has none: an empty list, 404 for a product', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi);
    // the customer is found (its row joined to no subscription): listing its entitlements is no 404
    const idle = await customerIn(testApi.platform.db, s.org.orgId);
    const listed = await testApi.request({
      method: 'GET',
      path: `/customers/${idle}/entitlements`,
      key: s.org.apiKey,
    });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().data).toEqual([]);
    // a product it has no item of is the entitlement not found, not the customer
    const one = await testApi.request({
      method: 'GET',
      path: `/customers/${idle}/entitlements/${s.apiCalls}`,
      key: s.org.apiKey,
    });
    expect(one.statusCode, one.body).toBe(404);
    expect(one.json()).toMatchObject({
      error_code: 'NOT_FOUND',
      detail: `Entitlement to product ${s.apiCalls} not found.`,
    });
  });

  it('an event at exactly a period end counts in the next period; a late event in its own period', async () => {
    const testApi = await start(mode);
    // started 40 days ago: the stored period (never billed) ended; now is in the second one
    const s = await customer(testApi, { daysAgo: 40, limit: '100' });
    const { rows } = await testApi.platform.db.query<{
      current_period_end: Date;
      current_period_start: Date;
    }>('SELECT current_period_start, current_period_end FROM subscriptions WHERE id = $1', [
      s.subscriptionId,
    ]);
    const first = { start: rows[0]!.current_period_start, end: rows[0]!.current_period_end };
    const initial = await check(testApi, s);
    expect(Date.parse(initial.period_end)).toBeGreaterThan(Date.now());
    await post(testApi, s, 3, { at: first.end }); // the boundary instant: the second period
    await post(testApi, s, 7, { at: new Date(first.end.getTime() - 1) }); // the last ms of the first: late
    await post(testApi, s, 1, { at: new Date(first.start.getTime()) });
    const now = await check(testApi, s);
    expect(now.used).toBe('3.00000000');
    const periods = [
      {
        orgId: s.org.orgId,
        subscriptionItemId: s.item,
        startMs: first.start.getTime(),
        endMs: first.end.getTime(),
      },
      {
        orgId: s.org.orgId,
        subscriptionItemId: s.item,
        startMs: first.end.getTime(),
        endMs: Date.parse(now.period_end),
      },
    ];
    expect((await testApi.usage.counter.used(periods)).map(String)).toEqual(['800000000', '300000000']);
    // and each agrees with what Postgres holds
    expect(await stored(testApi, s.item, first.start, first.end)).toBe('8.00000000');
    expect(await stored(testApi, s.item, first.end, new Date(now.period_end))).toBe('3.00000000');
  });

  it('right after a change the check answers it: a lower limit, an item replaced, whatever the last check read', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '10' });
    await post(testApi, s, 4);
    // this check leaves its items behind: the next one reads their counters while it queries
    expect(await check(testApi, s)).toMatchObject({ subscription_item_id: s.item, used: '4.00000000' });
    const change = (items: object[]) =>
      testApi.request({
        method: 'POST',
        path: `/subscriptions/${s.subscriptionId}/changes`,
        key: s.org.apiKey,
        payload: { items },
      });
    const lowered = await change([{ id: s.seatItem }, { id: s.item, usage_limit: '4' }]);
    expect(lowered.statusCode, lowered.body).toBe(200);
    expect(await check(testApi, s)).toMatchObject({
      subscription_item_id: s.item,
      usage_limit: '4.00000000',
      used: '4.00000000',
      has_access: false,
    });
    // the metered item replaced by another of the same product: one counter in each, same count
    const replaced = await change([{ id: s.seatItem }, { product_id: s.apiCalls, usage_limit: '10' }]);
    expect(replaced.statusCode, replaced.body).toBe(200);
    const replacement = (
      replaced.json().data.subscription.items as { id: number; product_id: number }[]
    ).find((item) => item.product_id === s.apiCalls)!.id;
    expect(replacement).not.toBe(s.item);
    expect(await check(testApi, s)).toMatchObject({
      subscription_item_id: replacement,
      used: '0.00000000',
      has_access: true,
    });
    await post(testApi, { ...s, item: replacement }, 2);
    expect(await check(testApi, s)).toMatchObject({ subscription_item_id: replacement, used: '2.00000000' });
  });

  it('checks one instant apart across a period boundary read each its own period', async () => {
    const testApi = await start(mode);
    // started 40 days ago: the stored period ended at `boundary`, in the past
    const s = await customer(testApi, { daysAgo: 40, limit: '100' });
    const { boundary, at } = await storedBoundary(testApi, s);
    // both counters built first, so the events below are counted by ingest, not rebuilt from Postgres
    expect((await at(boundary - 1)).used).toBe('0.00000000');
    expect((await at(boundary)).used).toBe('0.00000000');
    await post(testApi, s, 7, { at: new Date(boundary - 1) });
    await post(testApi, s, 3, { at: new Date(boundary) });
    // each check follows one at the other instant: what the last one read is no answer
    for (const [ms, used, end] of [
      [boundary - 1, '7.00000000', boundary],
      [boundary, '3.00000000', undefined],
      [boundary - 1, '7.00000000', boundary],
      [boundary, '3.00000000', undefined],
    ] as const) {
      const entitlement = await at(ms);
      expect(entitlement.used, `at ${new Date(ms).toISOString()}`).toBe(used);
      if (end) expect(Date.parse(entitlement.period_end)).toBe(end);
      else expect(Date.parse(entitlement.period_end)).toBeGreaterThan(boundary);
    }
  });

  it('checks of several organizations in one turn each get their own answer', async () => {
    const testApi = await start(mode);
    const a = await customer(testApi, { limit: '10' });
    const b = await customer(testApi, { limit: '20' });
    await post(testApi, a, 1);
    await post(testApi, b, 2);
    const { db } = testApi.platform;
    const { counter } = testApi.usage;
    for (let round = 0; round < 2; round++) {
      // submitted together: one query and one counter read for all three
      const [ofA, ofB, crossed] = await Promise.all([
        getEntitlement(db, counter, a.org.orgId, a.customerId, a.apiCalls),
        getEntitlement(db, counter, b.org.orgId, b.customerId, b.apiCalls),
        getEntitlement(db, counter, a.org.orgId, b.customerId, b.apiCalls).catch((error: unknown) => error),
      ]);
      expect(ofA).toMatchObject({
        subscription_item_id: a.item,
        used: '1.00000000',
        usage_limit: '10.00000000',
      });
      expect(ofB).toMatchObject({
        subscription_item_id: b.item,
        used: '2.00000000',
        usage_limit: '20.00000000',
      });
      expect(crossed).toMatchObject({ code: 'NOT_FOUND' });
    }
  });

  it('a lost counter is rebuilt exactly from the stored usage, also while events keep coming', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: null });
    for (let i = 0; i < 5; i++) await post(testApi, s, 1.5);
    const before = await check(testApi, s);
    expect(before.used).toBe('7.50000000');
    const voided = await post(testApi, s, 2);
    await testApi.request({
      method: 'POST',
      path: `/usage/events/${voided.data.id}/void`,
      key: s.org.apiKey,
    });

    const restarted = await loseCounters(testApi, s, mode);
    // events keep arriving while the counter is rebuilt; a check that starts the rebuild races them
    const reader = restarted ? await restartedApi(testApi, restarted) : testApi;
    let sent = 0;
    let sending = true;
    const sender = (async () => {
      while (sending) {
        await post(reader, s, 0.25);
        sent++;
      }
    })();
    const during = check(reader, s);
    const [rebuilt] = await Promise.all([during, new Promise((resolve) => setTimeout(resolve, 300))]);
    sending = false;
    await sender;
    expect(sent).toBeGreaterThan(0);
    // after: exactly what was sent, the voided one left out
    const expected = (7.5 + sent * 0.25).toFixed(8);
    expect((await check(reader, s)).used).toBe(expected);
    expect(Number((rebuilt as Entitlement).used)).toBeGreaterThanOrEqual(7.5);
    expect(
      await stored(
        testApi,
        s.item,
        new Date(Date.parse(before.period_end) - 40 * DAY),
        new Date(before.period_end),
      ),
    ).toBe(expected);
  });

  it('two readers rebuilding one counter at once, with events between, agree with Postgres', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: null });
    for (let i = 0; i < 3; i++) await post(testApi, s, 2);
    await check(testApi, s);
    if (mode === 'embedded') return; // one process holds the memory twin: one rebuild per counter there
    const second = await openUsageIngest(testApi.platform);
    extra.push(second);
    await loseCounters(testApi, s, mode);
    const period = (await check(testApi, s)).period_end;
    await loseCounters(testApi, s, mode);
    const counters = [testApi.usage.counter, second.counter];
    const p = {
      orgId: s.org.orgId,
      subscriptionItemId: s.item,
      startMs: Date.parse(period) - 1,
      endMs: Date.parse(period),
    };
    // the current period as entitlements read it
    const current = await testApi.platform.db.query<{ s: Date }>(
      'SELECT current_period_start AS s FROM subscriptions WHERE id = $1',
      [s.subscriptionId],
    );
    p.startMs = current.rows[0]!.s.getTime();
    const racing = counters.map((counter) => counter.used([p]));
    await post(testApi, s, 1);
    const answers = await Promise.all(racing);
    expect(answers.map(([used]) => String(used))).toEqual(
      answers.map(([used]) => String(used)).map(() => String(answers[0]![0])),
    );
    expect((await check(testApi, s)).used).toBe('7.00000000');
    expect((await second.counter.used([p])).map(String)).toEqual(['700000000']);
  });

  it('trialing has access; past_due none, in the period holding now; canceled shows its stored one', async () => {
    // docs/decisions.md, "What an entitlement says"
    const testApi = await start(mode);
    // started 40 days ago: the stored period (never billed) ended; now is in the second one
    const s = await customer(testApi, { daysAgo: 40, limit: '10' });
    const { db } = testApi.platform;
    const setStatus = (status: string) =>
      db.query('UPDATE subscriptions SET status = $2 WHERE id = $1', [s.subscriptionId, status]);
    await post(testApi, s, 3);
    await setStatus('trialing');
    const trialing = await check(testApi, s);
    expect(trialing).toMatchObject({ used: '3.00000000', remaining: '7.00000000', has_access: true });
    expect(Date.parse(trialing.period_end)).toBeGreaterThan(Date.now());
    expect(await check(testApi, s, s.seats)).toMatchObject({ has_access: true });
    // unpaid invoices: no access, but its usage still counts in the period holding now
    await setStatus('past_due');
    const pastDue = await check(testApi, s);
    expect(pastDue).toMatchObject({ used: '3.00000000', remaining: '7.00000000', has_access: false });
    expect(pastDue.period_end).toBe(trialing.period_end);
    expect(await check(testApi, s, s.seats)).toMatchObject({ has_access: false });
    // canceled (as a cancel at the period end leaves it): the stored period, ended, no access
    await setStatus('canceled');
    const { rows } = await db.query<{ current_period_end: Date }>(
      'SELECT current_period_end FROM subscriptions WHERE id = $1',
      [s.subscriptionId],
    );
    const canceled = await check(testApi, s);
    expect(canceled.has_access).toBe(false);
    expect(Date.parse(canceled.period_end)).toBe(rows[0]!.current_period_end.getTime());
    expect(canceled.period_end).not.toBe(trialing.period_end);
  });

  it('of two items of one product, the check answers one with access first, then the newest', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '10' });
    const newest = await anotherItemOfTheProduct(testApi, s, '1');
    expect(newest).toBeGreaterThan(s.item);
    // both with access: the newest
    expect(await check(testApi, s)).toMatchObject({ subscription_item_id: newest, has_access: true });
    // the newest at its limit: the older one, which still has access
    await post(testApi, { ...s, item: newest }, 1);
    expect(await check(testApi, s)).toMatchObject({ subscription_item_id: s.item, has_access: true });
    // neither with access: the newest again
    await post(testApi, s, 10);
    expect(await check(testApi, s)).toMatchObject({ subscription_item_id: newest, has_access: false });
  });

  it('of two items of one product, the older at its limit, the check answers the newer, with access', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '2' });
    await post(testApi, s, 2);
    const newer = await anotherItemOfTheProduct(testApi, s, '5');
    expect(newer).toBeGreaterThan(s.item);
    // the older item, read first, has none left: the newer one, which has access, is the answer
    expect(await check(testApi, s)).toMatchObject({
      subscription_item_id: newer,
      has_access: true,
      used: '0.00000000',
      remaining: '5.00000000',
    });
  });

  it('a check after a second item of the product appeared counts each item, whatever the last check read', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '10' });
    await post(testApi, s, 3);
    // these checks leave one metered item behind: the next ones read its counter while they query
    expect(await check(testApi, s)).toMatchObject({ subscription_item_id: s.item, used: '3.00000000' });
    const list = async () => {
      const response = await testApi.request({
        method: 'GET',
        path: `/customers/${s.customerId}/entitlements`,
        key: s.org.apiKey,
      });
      expect(response.statusCode, response.body).toBe(200);
      return response.json().data.map((e: Entitlement) => [e.subscription_item_id, e.used]);
    };
    expect(await list()).toEqual([
      [s.seatItem, '0.00000000'],
      [s.item, '3.00000000'],
    ]);
    const newest = await anotherItemOfTheProduct(testApi, s, '5');
    await post(testApi, { ...s, item: newest }, 1);
    expect(await check(testApi, s)).toMatchObject({
      subscription_item_id: newest,
      used: '1.00000000',
      remaining: '4.00000000',
    });
    expect(await list()).toEqual([
      [s.seatItem, '0.00000000'],
      [s.item, '3.00000000'],
      [newest, '1.00000000'],
    ]);
  });

  it('an item removed by a change is no longer listed', async () => {
    const testApi = await start(mode);
    const s = await customer(testApi, { limit: '10' });
    const changed = await testApi.request({
      method: 'POST',
      path: `/subscriptions/${s.subscriptionId}/changes`,
      key: s.org.apiKey,
      payload: { items: [{ id: s.seatItem }] },
    });
    expect(changed.statusCode, changed.body).toBe(200);
    const listed = await testApi.request({
      method: 'GET',
      path: `/customers/${s.customerId}/entitlements`,
      key: s.org.apiKey,
    });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().data.map((e: Entitlement) => e.subscription_item_id)).toEqual([s.seatItem]);
    const response = await testApi.request({
      method: 'GET',
      path: `/customers/${s.customerId}/entitlements/${s.apiCalls}`,
      key: s.org.apiKey,
    });
    expect(response.statusCode, response.body).toBe(404);
  });

  it('a void of a late event subtracts it in its own period, not the running one', async () => {
    const testApi = await start(mode);
    // started 40 days ago: the stored period ended at `boundary`, in the past
    const s = await customer(testApi, { daysAgo: 40, limit: '100' });
    const { rows } = await testApi.platform.db.query<{
      current_period_start: Date;
      current_period_end: Date;
    }>('SELECT current_period_start, current_period_end FROM subscriptions WHERE id = $1', [
      s.subscriptionId,
    ]);
    const first = {
      start: rows[0]!.current_period_start.getTime(),
      end: rows[0]!.current_period_end.getTime(),
    };
    const at = (ms: number) =>
      getEntitlement(testApi.platform.db, testApi.usage.counter, s.org.orgId, s.customerId, s.apiCalls, {
        now: new Date(ms),
      });
    // both counters built first, so the events below are counted (and voided) by the counters
    expect((await at(first.end - 1)).used).toBe('0.00000000');
    const running = await at(Date.now());
    expect(running.used).toBe('0.00000000');
    const late = await post(testApi, s, 7, { at: new Date(first.end - 1) });
    await post(testApi, s, 3);
    const voided = await testApi.request({
      method: 'POST',
      path: `/usage/events/${late.data.id}/void`,
      key: s.org.apiKey,
    });
    expect(voided.statusCode, voided.body).toBe(200);
    const periods = [
      { orgId: s.org.orgId, subscriptionItemId: s.item, startMs: first.start, endMs: first.end },
      {
        orgId: s.org.orgId,
        subscriptionItemId: s.item,
        startMs: first.end,
        endMs: Date.parse(running.period_end),
      },
    ];
    expect((await testApi.usage.counter.used(periods)).map(String)).toEqual(['0', '300000000']);
    expect((await check(testApi, s)).used).toBe('3.00000000');
  });
});

describe('the counter read beside the query (distributed: Redis)', () => {
  it('at the very instant a period ends, a check reads only the next period’s counter', async () => {
    const testApi = await start('distributed');
    const s = await customer(testApi, { daysAgo: 40, limit: '100' });
    const { boundary, at } = await storedBoundary(testApi, s);
    await at(boundary);
    const first = await at(boundary - 1);
    const counterKeys = `${testApi.config.REDIS_KEY_PREFIX}usage:counter:${s.org.orgId}:${first.subscription_item_id}:`;
    /** The periods (their start) of this item whose counters `check` reads. */
    const periodsReadBy = async (check: () => Promise<unknown>) => {
      const read = new Set<string>();
      const monitor = await monitorRedis(testServices().redisUrl, (args) => {
        for (const arg of args) if (arg.startsWith(counterKeys)) read.add(arg.slice(counterKeys.length));
      });
      try {
        await check();
        await new Promise((resolve) => setTimeout(resolve, 200));
      } finally {
        monitor.close();
      }
      // a counter's journal (`<start>:j`) is of the same period
      return [...new Set([...read].map((key) => Number.parseInt(key, 10)))];
    };
    // the last check read the period ending at `boundary`: at `boundary` it holds no longer (the
    // period after the one read may be built ahead in the background meanwhile, by design)
    const atBoundary = await periodsReadBy(() => at(boundary));
    expect(atBoundary).toContain(boundary);
    expect(atBoundary.filter((start) => start < boundary)).toEqual([]);
    // and the period starting at `boundary` does not hold the instant before it
    const before = (await periodsReadBy(() => at(boundary - 1))).filter((start) => start <= boundary);
    expect(before).toHaveLength(1);
    expect(before[0]).toBeLessThan(boundary);
  });

  it('a repeated check reads the last check’s counter while its query still runs', async () => {
    const testApi = await start('distributed');
    const s = await customer(testApi, { limit: '10' });
    await post(testApi, s, 4);
    const first = await check(testApi, s);
    const db = testApi.platform.db;
    const { rows } = await db.query<{ s: Date }>(
      'SELECT current_period_start AS s FROM subscriptions WHERE id = $1',
      [s.subscriptionId],
    );
    const key = `${testApi.config.REDIS_KEY_PREFIX}usage:counter:${s.org.orgId}:${s.item}:${rows[0]!.s.getTime()}`;
    // the same Postgres, its items query held until the counter was read
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const gated: Queryable = {
      query: async (text, values) => {
        await held;
        return db.query(text, values);
      },
    };
    let reads = 0;
    const monitor = await monitorRedis(testServices().redisUrl, (args) => {
      if (args.includes(key)) reads++;
    });
    try {
      const answer = getEntitlement(gated, testApi.usage.counter, s.org.orgId, s.customerId, s.apiCalls);
      await eventually(async () => expect(reads).toBeGreaterThan(0), 5_000);
      release();
      expect(await answer).toEqual(first);
      expect(first.used).toBe('4.00000000');
    } finally {
      release();
      monitor.close();
    }
  });

  it('a void made while a rebuild runs is taken off once, as Postgres shows it', async () => {
    const testApi = await start('distributed');
    const s = await customer(testApi, { limit: null });
    await post(testApi, s, 3);
    const voided = await post(testApi, s, 2);
    expect((await check(testApi, s)).used).toBe('5.00000000');
    await loseCounters(testApi, s, 'distributed');
    const rebuilt = check(testApi, s);
    // the rebuild's cut is made (its lease is on the counter): the void is journaled, and the
    // snapshot, taken after settleMs, shows it voided. (The next period's counter may be built
    // ahead beside it: only the running period's is watched.)
    const redis = testApi.platform.redis!;
    const { rows } = await testApi.platform.db.query<{ s: Date }>(
      'SELECT current_period_start AS s FROM subscriptions WHERE id = $1',
      [s.subscriptionId],
    );
    const key = `${testApi.config.REDIS_KEY_PREFIX}usage:counter:${s.org.orgId}:${s.item}:${rows[0]!.s.getTime()}`;
    await eventually(async () => expect(await redis.hget(key, 's')).not.toBeNull(), 5_000);
    const response = await testApi.request({
      method: 'POST',
      path: `/usage/events/${voided.data.id}/void`,
      key: s.org.apiKey,
    });
    expect(response.statusCode, response.body).toBe(200);
    expect((await rebuilt).used).toBe('3.00000000');
    expect((await check(testApi, s)).used).toBe('3.00000000');
  });
});

describe('an event the log refused', () => {
  it('is uncounted with its released key: a 503 leaves used as it was, the retry counts once', async () => {
    const broker = await startKafkaTestBroker();
    try {
      const topic = uniqueName('usage');
      api = await startTestApi({
        env: {
          KAFKA_BROKERS: broker.brokers.join(','),
          KAFKA_USAGE_TOPIC: topic,
          KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
          KAFKA_ACK_TIMEOUT_MS: '1000',
        },
      });
      await startSinks();
      const s = await customer(api, { limit: '5' });
      await post(api, s, 2);
      expect((await check(api, s)).used).toBe('2.00000000');
      // the broker refuses the next produce (a non-retriable error): 503, the key released
      await broker.injectErrors(0, 10, 1);
      const refused = await api.request({
        method: 'POST',
        path: '/usage/events',
        key: s.org.apiKey,
        payload: { subscription_item_id: s.item, quantity: 3 },
        headers: { 'idempotency-key': 'refused-once' },
      });
      expect(refused.statusCode, refused.body).toBe(503);
      expect(await check(api, s)).toMatchObject({ used: '2.00000000', has_access: true });
      await post(api, s, 3, { key: 'refused-once' });
      expect(await check(api, s)).toMatchObject({
        used: '5.00000000',
        has_access: false,
        remaining: '0.00000000',
      });
    } finally {
      await sinks?.stop();
      sinks = undefined;
      await api?.close();
      api = undefined;
      await broker.stop();
    }
  });
});

describe('a void whose transaction fails at its commit (embedded: Postgres is its own)', () => {
  it('puts the subtracted quantity back: used as before, and the retry takes it off once', async () => {
    const testApi = await start('embedded');
    const { db } = testApi.platform;
    const s = await customer(testApi, { limit: '10' });
    await post(testApi, s, 2);
    const event = (await post(testApi, s, 4.5)).data as { id: string };
    expect((await check(testApi, s)).used).toBe('6.50000000');
    // A deferred constraint on this one event fails the void's COMMIT: after the counter
    // subtracted it, the only point where the void can fail and its undo must run.
    const name = uniqueName('fail_void').replace(/[^a-z0-9_]/gi, '_');
    await db.query(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN RAISE EXCEPTION 'void refused at commit'; END $$`,
    );
    await db.query(
      `CREATE CONSTRAINT TRIGGER ${name} AFTER UPDATE ON usage_events DEFERRABLE INITIALLY DEFERRED
       FOR EACH ROW WHEN (NEW.id = '${event.id}' AND NEW.voided_at IS NOT NULL) EXECUTE FUNCTION ${name}()`,
    );
    const void_ = () =>
      testApi.request({ method: 'POST', path: `/usage/events/${event.id}/void`, key: s.org.apiKey });
    try {
      const failed = await void_();
      expect(failed.statusCode, failed.body).toBeGreaterThanOrEqual(500);
      expect(await stored(testApi, s.item, new Date(0), new Date(Date.now() + DAY))).toBe('6.50000000');
      expect(await check(testApi, s)).toMatchObject({ used: '6.50000000', remaining: '3.50000000' });
    } finally {
      await db.query(`DROP TRIGGER ${name} ON usage_events`);
      await db.query(`DROP FUNCTION ${name}()`);
    }
    const voided = await void_();
    expect(voided.statusCode, voided.body).toBe(200);
    expect((await check(testApi, s)).used).toBe('2.00000000');
  });
});

/** The api started again on the same platform with a fresh pipeline: a restart of the process. */
async function restartedApi(testApi: TestApi, pipeline: UsagePipeline): Promise<TestApi> {
  const app = await buildApiApp({
    platform: testApi.platform,
    bodyLimit: testApi.config.BODY_LIMIT_BYTES,
    invoiceCacheBytes: 1024 * 1024,
    publicBaseUrl: undefined,
    publicUrl: undefined,
    webhookAllowLocalhost: true,
    webhookMaxAttempts: 5,
    usageIngest: pipeline.ingest,
    usageRead: pipeline.readStores,
    portalUsage: portalUsageSource(testApi.platform.db, pipeline.readStores),
    extraReadinessChecks: pipeline.checks,
  });
  await app.ready();
  apps.push(app);
  return {
    ...testApi,
    app,
    usage: pipeline,
    request: ({ path, key, headers, ...rest }) =>
      app.inject({
        ...rest,
        url: `${BASE_PATH}${path}`,
        headers: { ...headers, ...(key ? { authorization: `Bearer ${key}` } : {}) },
      }),
  };
}
