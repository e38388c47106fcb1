import { afterEach, describe, expect, it } from 'vitest';
import { getSubscriptionUsage, setCreditTopUp } from '../../libs/billing/index.js';
import { topUpPolicy, UsageGuardrails } from '../../libs/guardrails/index.js';
import type { CreditGrant } from '../../libs/schemas/index.js';
import { startUsageSinks, type UsageSinks } from '../../libs/usage/index.js';
import { customerIn } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';
import { eventually, meteredSubscriptionThisMonth } from './support.js';

/*
 * Policies on counted usage (libs/guardrails): an automatic top-up fires as usage is counted, in
 * both modes, through the same evaluator: riding the in-process log (embedded), and as a consumer
 * group of its own beside the sinks (distributed, the Kafka test broker).
 */

let api: TestApi | undefined;
let sinks: UsageSinks | undefined;
let guardrails: UsageGuardrails | undefined;
afterEach(async () => {
  await sinks?.stop();
  await guardrails?.stop();
  await api?.close();
  sinks = undefined;
  guardrails = undefined;
  api = undefined;
});

/** A customer whose running period has usage priced at 1.00 a call, with a top-up at 10 -> 100. */
async function customerWithTopUp(testApi: TestApi) {
  const db = testApi.platform.db;
  const org = await createTestOrg(db);
  // another customer first: the customer's id is not its subscription's (a fresh database)
  await customerIn(db, org.orgId);
  const { customerId, subscription } = await meteredSubscriptionThisMonth(db, org.orgId);
  expect(customerId).not.toBe(subscription.id);
  await setCreditTopUp(db, org.orgId, customerId, { enabled: true, threshold: '10', target: '100' });
  return { org, customerId, item: subscription.items[0]!.id };
}

async function postUsage(testApi: TestApi, key: string, item: number, quantity: number) {
  const response = await testApi.request({
    method: 'POST',
    path: '/usage/events',
    key,
    payload: { subscription_item_id: item, quantity, timestamp: new Date().toISOString() },
    headers: { 'idempotency-key': uniqueName('key') },
  });
  expect(response.statusCode, response.body).toBe(201);
}

async function topUps(testApi: TestApi, key: string, customerId: number): Promise<CreditGrant[]> {
  const response = await testApi.request({
    method: 'GET',
    path: `/customers/${customerId}/credit-grants`,
    key,
  });
  return (response.json().data as CreditGrant[]).filter((grant) => grant.name === 'Automatic top-up');
}

describe('automatic top-up as usage is counted', () => {
  it('embedded: the in-process log hands counted usage to the policies; one top-up, never a second', async () => {
    let handed: UsageGuardrails | undefined;
    api = await startTestApi({
      redis: false,
      listeners: (platform) => {
        handed = new UsageGuardrails({
          db: platform.db,
          log: runLogger('guardrails'),
          policies: [topUpPolicy(platform.db)],
        });
        return [handed.sink('queued')];
      },
    });
    guardrails = handed!;
    guardrails.attach(api.usage.readStores);
    const { org, customerId, item } = await customerWithTopUp(api);
    // 5 calls: upcoming 5.00 + GST 0.25 = 5.25, projected -5.25: below 10
    await postUsage(api, org.apiKey, item, 5);
    const made = await eventually(async () => {
      const grants = await topUps(api!, org.apiKey, customerId);
      expect(grants).toHaveLength(1);
      return grants;
    });
    expect(made[0]).toMatchObject({ category: 'paid', status: 'PENDING', amount: '105.25000000' });
    // more usage while it waits for its payment: still one
    await postUsage(api, org.apiKey, item, 3);
    await guardrails.stop();
    expect(await topUps(api, org.apiKey, customerId)).toHaveLength(1);
  });

  it('distributed: a consumer group of its own beside the sinks, after the pg-sink counted the event', async () => {
    const topic = uniqueName('usage');
    api = await startTestApi({
      env: {
        KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
        KAFKA_USAGE_TOPIC: topic,
        KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
      },
    });
    guardrails = new UsageGuardrails({
      db: api.platform.db,
      log: runLogger('guardrails'),
      policies: [topUpPolicy(api.platform.db)],
    });
    guardrails.attach(api.usage.readStores);
    sinks = await startUsageSinks({
      config: { ...api.config, SINK_FLUSH_MS: 50 },
      db: api.platform.db,
      log: runLogger('sinks'),
      listeners: [guardrails.sink('evaluated')],
    });
    expect(sinks.runners.map((runner) => runner.name)).toContain('guardrails');
    const { org, customerId, item } = await customerWithTopUp(api);
    await postUsage(api, org.apiKey, item, 40);
    const made = await eventually(async () => {
      const grants = await topUps(api!, org.apiKey, customerId);
      expect(grants).toHaveLength(1);
      return grants;
    }, 20_000);
    // 40.00 + GST 2.00 = 42.00 pending: 100 - (-42.00)
    expect(made[0]).toMatchObject({ status: 'PENDING', amount: '142.00000000' });
  });
});

describe('voids on the log', () => {
  it('evaluate a void once the transaction that voids its row committed, not before', async () => {
    const seen: string[] = [];
    let handed: UsageGuardrails | undefined;
    api = await startTestApi({
      redis: false,
      listeners: (platform) => {
        handed = new UsageGuardrails({
          db: platform.db,
          log: runLogger('guardrails'),
          policies: [
            {
              name: 'reads the item',
              async evaluate(touched, stores) {
                const usage = await getSubscriptionUsage(
                  platform.db,
                  stores,
                  touched[0]!.orgId,
                  touched[0]!.subscriptionId,
                );
                seen.push(usage.items[0]!.quantity);
              },
            },
          ],
        });
        return [handed.sink('queued')];
      },
    });
    guardrails = handed!;
    guardrails.attach(api.usage.readStores);
    const db = api.platform.db;
    const { org, item } = await customerWithTopUp(api);
    await postUsage(api, org.apiKey, item, 60);
    await eventually(async () => expect(seen).toEqual(['60.00000000']));
    const { rows } = await db.query<{ id: string }>(
      'SELECT id FROM usage_events WHERE subscription_item_id = $1',
      [item],
    );
    // the void's order (libs/usage): on the log, then its row and totals, then the commit; the
    // totals' row held here keeps the void's transaction open after its handing to the log
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held!: () => void;
    const holding = new Promise<void>((resolve) => {
      held = resolve;
    });
    const holder = db.transaction(async (tx) => {
      await tx.query('SELECT 1 FROM usage_daily_totals WHERE subscription_item_id = $1 FOR UPDATE', [item]);
      held();
      await released;
    });
    await holding;
    const voiding = api.request({
      method: 'POST',
      path: `/usage/events/${rows[0]!.id}/void`,
      key: org.apiKey,
      payload: {},
    });
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(seen).toEqual(['60.00000000']); // not read while the void is uncommitted
    release();
    await holder;
    expect((await voiding).statusCode).toBe(200);
    await eventually(async () => expect(seen).toEqual(['60.00000000', '0.00000000']));
  });
});
