import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runBilling, type UsageForTransaction } from '../../libs/billing/index.js';
import { Database } from '../../libs/db/index.js';
import {
  alertPolicy,
  createAlert as createScopedAlert,
  deleteAlert,
  evaluateAlerts,
  topUpPolicy,
  UsageGuardrails,
} from '../../libs/guardrails/index.js';
import type { Alert } from '../../libs/schemas/index.js';
import { PostgresUsageAggregator, PostgresUsageSink } from '../../libs/usage/index.js';
import { basicCatalog, customerIn, outbox, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';
import { runLogger } from '../helpers/run-log.js';
import { uniqueName } from '../helpers/services.js';
import { eventually } from '../usage/support.js';

/*
 * Spend alerts through the public API, evaluated as usage is counted (the embedded mode: the
 * in-process log hands each write to libs/guardrails). API calls cost 1.00 each up to 100, 0.50
 * beyond (graduated); customers are in Alberta.
 */

let api: TestApi;
let guardrails: UsageGuardrails;
let orgA: TestOrg;
let orgB: TestOrg;
let second: Database;
const usage: UsageForTransaction = (tx) => new PostgresUsageAggregator(tx);

beforeAll(async () => {
  let made: UsageGuardrails | undefined;
  api = await startTestApi({
    redis: false,
    listeners: (platform) => {
      made = new UsageGuardrails({
        db: platform.db,
        log: runLogger('guardrails'),
        policies: [topUpPolicy(platform.db), alertPolicy(platform.db)],
      });
      return [made.sink('queued')];
    },
  });
  guardrails = made!;
  guardrails.attach(api.usage.readStores);
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
  second = new Database(api.database.url, { poolSize: 4 });
});
afterAll(async () => {
  await guardrails?.stop();
  await second?.close();
  await api?.close();
});

const db = () => api.platform.db;

function post(path: string, body: unknown, key = orgA.apiKey) {
  return api.request({
    method: 'POST',
    path,
    key,
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(body),
  });
}
const get = (path: string, key = orgA.apiKey) => api.request({ method: 'GET', path, key });

/** A new customer's subscription to the products `pick` takes of the basic catalog, from `start`. */
async function subscribedFrom(
  start: Date,
  pick: (catalog: Awaited<ReturnType<typeof basicCatalog>>) => number[],
  org = orgA,
) {
  const catalog = await basicCatalog(db(), org.orgId);
  const customerId = await customerIn(db(), org.orgId, { state_province: 'AB' });
  const items = pick(catalog).map((product_id) => ({ product_id }));
  const subscription = await subscribe(
    db(),
    org.orgId,
    { customer_id: customerId, items, start_date: start },
    new Date(),
  );
  return { customerId, subscription };
}

/** A subscription running this month with seats and API calls. */
async function running(org = orgA) {
  const now = new Date();
  const { customerId, subscription } = await subscribedFrom(
    new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    ({ seats, apiCalls }) => [seats, apiCalls],
    org,
  );
  const metered = subscription.items.find((item) => item.usage_type === 'metered')!;
  const licensed = subscription.items.find((item) => item.usage_type === 'licensed')!;
  return { customerId, subscription, metered, licensed };
}

async function report(item: number, quantity: number, key = orgA.apiKey) {
  const response = await api.request({
    method: 'POST',
    path: '/usage/events',
    key,
    payload: { subscription_item_id: item, quantity, timestamp: new Date().toISOString() },
    headers: { 'idempotency-key': uniqueName('key') },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data as { id: string };
}

async function createAlert(body: Record<string, unknown>, key = orgA.apiKey): Promise<Alert> {
  const response = await post('/alerts', body, key);
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data;
}

/** A running subscription with a usage_quantity alert at 10 on its metered item, crossed (20 reported). */
async function triggeredQuantityAlert() {
  const { subscription, metered } = await running();
  const alert = await createAlert({
    subscription_id: subscription.id,
    metric: 'usage_quantity',
    subscription_item_id: metered.id,
    threshold: '10',
  });
  await report(metered.id, 20);
  await eventually(async () =>
    expect((await get(`/alerts/${alert.id}`)).json().data.status).toBe('TRIGGERED'),
  );
  return { subscription, metered, alert };
}

async function events(orgId: number, type: string, alertId: string) {
  return (await outbox(db(), orgId, type)).filter((event) => event.data.id === alertId);
}

function detailsOf(response: { statusCode: number; body: string; json(): unknown }) {
  expect(response.statusCode, response.body).toBe(422);
  return (response.json() as { details: { field: string }[] }).details.map((d) => d.field);
}

describe('alerts', () => {
  it('fires alert.triggered once when usage reaches the threshold, and alert.resolved once when a void takes it back', async () => {
    const { subscription, metered } = await running();
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: metered.id,
      threshold: '100',
      name: 'API calls at 100',
    });
    expect(alert).toMatchObject({
      object: 'alert',
      subscription_id: subscription.id,
      subscription_item_id: metered.id,
      metric: 'usage_quantity',
      threshold: '100.00000000',
      name: 'API calls at 100',
      status: 'OK',
      value: '0.00000000',
      triggered_at: null,
    });
    await report(metered.id, 60);
    const crossing = await report(metered.id, 40); // 100: the threshold itself
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
        status: 'TRIGGERED',
        value: '100.00000000',
      });
    });
    await report(metered.id, 5); // still above: no second event
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data.value).toBe('105.00000000');
    });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);

    // a void takes it below again: resolved, once
    const voided = await post(`/usage/events/${crossing.id}/void`, {});
    expect(voided.statusCode, voided.body).toBe(200);
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
        status: 'OK',
        value: '65.00000000',
        triggered_at: null,
      });
    });
    expect(await events(orgA.orgId, 'alert.resolved', alert.id)).toHaveLength(1);
    const [resolved] = await events(orgA.orgId, 'alert.resolved', alert.id);
    expect(resolved!.data).toMatchObject({ status: 'OK', triggered_at: null });
    const [triggered] = await events(orgA.orgId, 'alert.triggered', alert.id);
    expect(triggered!.data).toMatchObject({ id: alert.id, object: 'alert', status: 'TRIGGERED' });
  });

  it('usage_amount watches the period amount before tax; evaluated on creation already crossed', async () => {
    const { subscription, metered } = await running();
    await report(metered.id, 120); // 100 x 1.00 + 20 x 0.50 = 110.00
    await eventually(async () => {
      const usageNow = (await get(`/subscriptions/${subscription.id}/usage`)).json().data;
      expect(usageNow.total_amount).toBe('110.00000000');
    });
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_amount',
      threshold: '110',
    });
    expect(alert).toMatchObject({ status: 'TRIGGERED', value: '110.00000000' });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);
  });

  it('two evaluators of one crossing (two processes) fire it once', async () => {
    const { subscription, metered } = await running();
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: metered.id,
      threshold: '50',
    });
    // the usage reaches Postgres without the guardrails seeing it (as if their process had died)
    await new PostgresUsageSink(db()).write([
      {
        id: randomUUID(),
        orgId: orgA.orgId,
        subscriptionItemId: metered.id,
        idempotencyKey: uniqueName('race'),
        quantity: '75',
        occurredAtMs: Date.now(),
        recordedAtMs: Date.now(),
      },
    ]);
    const scope = { subscriptions: [{ orgId: orgA.orgId, subscriptionId: subscription.id }] };
    await Promise.all(
      Array.from({ length: 6 }, (_, n) => evaluateAlerts(n % 2 ? db() : second, api.usage.readStores, scope)),
    );
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);
    expect((await get(`/alerts/${alert.id}`)).json().data.status).toBe('TRIGGERED');
  });

  it('alerts crossed in one evaluation emit their events in alert id order, in the outbox too', async () => {
    const { subscription, metered } = await running();
    const alerts: Alert[] = [];
    for (const threshold of ['5', '10', '15']) {
      alerts.push(
        await createAlert({
          subscription_id: subscription.id,
          metric: 'usage_quantity',
          subscription_item_id: metered.id,
          threshold,
        }),
      );
    }
    // the usage reaches Postgres without the guardrails seeing it: only the call below evaluates it
    await new PostgresUsageSink(db()).write([
      {
        id: randomUUID(),
        orgId: orgA.orgId,
        subscriptionItemId: metered.id,
        idempotencyKey: uniqueName('three'),
        quantity: '20',
        occurredAtMs: Date.now(),
        recordedAtMs: Date.now(),
      },
    ]);
    const moved = await evaluateAlerts(db(), api.usage.readStores, {
      subscriptions: [{ orgId: orgA.orgId, subscriptionId: subscription.id }],
    });
    const ids = alerts.map((alert) => alert.id).sort();
    expect(moved.map((event) => [event.type, (event.data as Alert).id])).toEqual(
      ids.map((id) => ['alert.triggered', id]),
    );
    const outboxed = (await outbox(db(), orgA.orgId, 'alert.triggered')).map((event) => event.data.id);
    expect(outboxed.filter((id) => ids.includes(id as string))).toEqual(ids);
  });

  it('an alert whose subscription cannot be invoiced is skipped; the others of its evaluation move', async () => {
    const good = await running();
    const bad = await running();
    const alertOf = (subscriptionId: number) =>
      createAlert({ subscription_id: subscriptionId, metric: 'usage_amount', threshold: '5' });
    const fine = await alertOf(good.subscription.id);
    const stuck = await alertOf(bad.subscription.id);
    // a row stored before currencies were checked: its usage cannot be priced (UnbillableError);
    // its alert sorts first, so it is met before the other in the evaluation
    await db().query(`UPDATE subscriptions SET currency = 'XYZ' WHERE id = $1`, [bad.subscription.id]);
    const stuckId = `00000000-0000-4000-8000-${stuck.id.slice(-12)}`;
    await db().query('UPDATE alerts SET id = $2 WHERE id = $1', [stuck.id, stuckId]);
    // the usage reaches Postgres without the guardrails seeing it: only the call below evaluates it
    await new PostgresUsageSink(db()).write([
      {
        id: randomUUID(),
        orgId: orgA.orgId,
        subscriptionItemId: good.metered.id,
        idempotencyKey: uniqueName('unbillable'),
        quantity: '6',
        occurredAtMs: Date.now(),
        recordedAtMs: Date.now(),
      },
    ]);
    const moved = await evaluateAlerts(db(), api.usage.readStores, {
      alertIds: [stuckId, fine.id],
    });
    expect(moved.map((event) => [event.type, (event.data as Alert).id])).toEqual([
      ['alert.triggered', fine.id],
    ]);
    expect((await get(`/alerts/${fine.id}`)).json().data).toMatchObject({
      status: 'TRIGGERED',
      value: '6.00000000',
    });
    expect((await get(`/alerts/${stuckId}`)).json().data).toMatchObject({
      status: 'OK',
      value: '0.00000000',
    });
  });

  it('a credit alert whose customer cannot be invoiced is made unread: OK, value null', async () => {
    const { subscription, metered } = await running();
    // a row stored before currencies were checked: an item priced in another currency than its
    // subscription, so the upcoming invoice (and the credit balance) cannot be worked out
    await db().query(
      `UPDATE products SET currency = 'USD'
        WHERE id = (SELECT product_id FROM subscription_items WHERE id = $1)`,
      [metered.id],
    );
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '20',
    });
    expect(alert).toMatchObject({ status: 'OK', value: null, triggered_at: null });
    expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({ status: 'OK', value: null });
  });

  it('a new period sets a triggered usage alert back to OK silently', async () => {
    const { subscription, alert } = await triggeredQuantityAlert();
    // the period ends: the run moves the subscription on, and the alert is evaluated in the new period
    const nextMonth = new Date(subscription.current_period_end);
    await runBilling(db(), { usage, orgId: orgA.orgId, now: nextMonth });
    await evaluateAlerts(db(), api.usage.readStores, {
      subscriptions: [{ orgId: orgA.orgId, subscriptionId: subscription.id }],
    });
    expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
      status: 'OK',
      triggered_at: null,
    });
    expect(await events(orgA.orgId, 'alert.resolved', alert.id)).toEqual([]);
  });

  it('a usage alert still TRIGGERED from the last period fires again when the new period opens crossed', async () => {
    const { subscription, metered, alert } = await triggeredQuantityAlert();
    // usage of the next period reaches Postgres first (the guardrails do not see it); then the run
    // moves the subscription on: every reading of the new period finds it crossed at once
    const nextMonth = new Date(subscription.current_period_end);
    await new PostgresUsageSink(db()).write([
      {
        id: randomUUID(),
        orgId: orgA.orgId,
        subscriptionItemId: metered.id,
        idempotencyKey: uniqueName('next-period'),
        quantity: '12',
        occurredAtMs: nextMonth.getTime() + 3_600_000,
        recordedAtMs: Date.now(),
      },
    ]);
    await runBilling(db(), { usage, orgId: orgA.orgId, now: nextMonth });
    await evaluateAlerts(db(), api.usage.readStores, {
      subscriptions: [{ orgId: orgA.orgId, subscriptionId: subscription.id }],
    });
    expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
      status: 'TRIGGERED',
      value: '12.00000000',
    });
    // one crossing per period: the second period's is an event of its own
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(2);
    expect(await events(orgA.orgId, 'alert.resolved', alert.id)).toEqual([]);
  });

  it('credit_balance fires when projected falls below the threshold, and resolves on a grant', async () => {
    const { customerId, subscription, metered } = await running();
    const grant = await post(`/customers/${customerId}/credit-grants`, {
      amount: '100.00',
      category: 'promotional',
    });
    expect(grant.statusCode).toBe(201);
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '20',
    });
    // upcoming: seats 10.00 + GST 0.50 = 10.50; projected 89.50: OK
    expect(alert).toMatchObject({ status: 'OK', value: '89.50000000' });
    await report(metered.id, 80); // + 80.00 + GST 4.00: upcoming 94.50, projected 5.50
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
        status: 'TRIGGERED',
        value: '5.50000000',
      });
    });
    await post(`/customers/${customerId}/credit-grants`, { amount: '50.00', category: 'promotional' });
    expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
      status: 'OK',
      value: '55.50000000',
    });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);
    expect(await events(orgA.orgId, 'alert.resolved', alert.id)).toHaveLength(1);
  });

  it('credit_balance at exactly its threshold has not fallen below it; a cent under fires', async () => {
    const { customerId, subscription, metered } = await running();
    const grant = await post(`/customers/${customerId}/credit-grants`, {
      amount: '100.00',
      category: 'promotional',
    });
    expect(grant.statusCode).toBe(201);
    // upcoming: seats 10.00 + GST 0.50 = 10.50; projected 89.50, the threshold itself
    // (docs/decisions.md, "Alerts fire once per crossing": projected credit falling below it)
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '89.50',
    });
    expect(alert).toMatchObject({ status: 'OK', value: '89.50000000', triggered_at: null });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toEqual([]);
    await report(metered.id, 1); // + 1.00 + GST 0.05: projected 88.45
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
        status: 'TRIGGERED',
        value: '88.45000000',
      });
    });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);
  });

  it('credit_balance fires on a change of items: the proration moved what the customer owes', async () => {
    // a period that began a day ago: most of it is left to prorate, whatever the day of the month
    const { customerId, subscription } = await subscribedFrom(
      new Date(Date.now() - 86_400_000),
      ({ seats }) => [seats],
    );
    expect(
      (await post(`/customers/${customerId}/credit-grants`, { amount: '100.00', category: 'promotional' }))
        .statusCode,
    ).toBe(201);
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '80',
    });
    // upcoming: seats 10.00 + GST 0.50 = 10.50; projected 89.50: OK
    expect(alert).toMatchObject({ status: 'OK', value: '89.50000000' });
    // 1 -> 3 seats for the rest of the period: about +20.00 + GST, projected about 69: below 80.
    // The route checks alerts after it answers (no usage event is involved to check them).
    const changed = await post(`/subscriptions/${subscription.id}/changes`, {
      items: [{ id: subscription.items[0]!.id, quantity: 3 }],
    });
    expect(changed.statusCode, changed.body).toBe(200);
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data.status).toBe('TRIGGERED');
    });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);
  });

  it('credit_balance watches the customer: usage on its other subscription fires it', async () => {
    const { customerId, subscription } = await running();
    const { apiCalls } = await basicCatalog(db(), orgA.orgId);
    const now = new Date();
    const other = await subscribe(
      db(),
      orgA.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: apiCalls }],
        start_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      },
      now,
    );
    const grant = await post(`/customers/${customerId}/credit-grants`, {
      amount: '100.00',
      category: 'promotional',
    });
    expect(grant.statusCode).toBe(201);
    // on the first subscription; upcoming: its seats 10.00 + GST 0.50; projected 89.50
    const alert = await createAlert({
      subscription_id: subscription.id,
      metric: 'credit_balance',
      threshold: '20',
    });
    expect(alert).toMatchObject({ status: 'OK', value: '89.50000000' });
    // usage of the other subscription: + 80.00 + GST 4.00, projected 5.50
    await report(other.items[0]!.id, 80);
    await eventually(async () => {
      expect((await get(`/alerts/${alert.id}`)).json().data).toMatchObject({
        status: 'TRIGGERED',
        value: '5.50000000',
      });
    });
    expect(await events(orgA.orgId, 'alert.triggered', alert.id)).toHaveLength(1);
  });

  it('usage_quantity reads its own item, not another metered item of the subscription', async () => {
    const { apiCalls: first } = await basicCatalog(db(), orgA.orgId);
    const { apiCalls: second } = await basicCatalog(db(), orgA.orgId);
    const customerId = await customerIn(db(), orgA.orgId, { state_province: 'AB' });
    const now = new Date();
    const subscription = await subscribe(
      db(),
      orgA.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: first }, { product_id: second }],
        start_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
      },
      now,
    );
    const [used, unused] = subscription.items;
    await report(used!.id, 20);
    await eventually(async () => {
      const usageNow = (await get(`/subscriptions/${subscription.id}/usage`)).json().data;
      expect(usageNow.total_amount).toBe('20.00000000');
    });
    // evaluated at creation, each on its own item's quantity
    const quiet = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: unused!.id,
      threshold: '10',
    });
    expect(quiet).toMatchObject({ status: 'OK', value: '0.00000000' });
    const crossed = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: used!.id,
      threshold: '10',
    });
    expect(crossed).toMatchObject({ status: 'TRIGGERED', value: '20.00000000' });
  });

  it('refuses bad input field by field, and 404 for what another organization has', async () => {
    const { subscription, metered, licensed } = await running();
    expect(
      detailsOf(
        await post('/alerts', { subscription_id: subscription.id, metric: 'usage_count', threshold: '1' }),
      ),
    ).toEqual(['metric']);
    expect(
      detailsOf(
        await post('/alerts', { subscription_id: subscription.id, metric: 'usage_quantity', threshold: '1' }),
      ),
    ).toEqual(['subscription_item_id']);
    expect(
      detailsOf(
        await post('/alerts', {
          subscription_id: subscription.id,
          metric: 'usage_quantity',
          subscription_item_id: licensed.id,
          threshold: '1',
        }),
      ),
    ).toEqual(['subscription_item_id']);
    const other = await running();
    expect(
      detailsOf(
        await post('/alerts', {
          subscription_id: subscription.id,
          metric: 'usage_quantity',
          subscription_item_id: other.metered.id,
          threshold: '1',
        }),
      ),
    ).toEqual(['subscription_item_id']);
    for (const threshold of ['0', '-5']) {
      expect(
        detailsOf(
          await post('/alerts', {
            subscription_id: subscription.id,
            metric: 'usage_quantity',
            subscription_item_id: metered.id,
            threshold,
          }),
        ),
      ).toEqual(['threshold']);
    }
    expect(
      detailsOf(
        await post('/alerts', {
          subscription_id: subscription.id,
          metric: 'credit_balance',
          threshold: '-1',
        }),
      ),
    ).toEqual(['threshold']);
    // a usage_amount alert needs a threshold above zero, as a quantity alert does
    expect(
      detailsOf(
        await post('/alerts', { subscription_id: subscription.id, metric: 'usage_amount', threshold: '0' }),
      ),
    ).toEqual(['threshold']);
    // each detail says what is wrong with its field: missing, or out of range
    const codes = async (body: Record<string, unknown>) => {
      const response = await post('/alerts', body);
      detailsOf(response);
      return (response.json() as { details: { field: string; code: string }[] }).details.map(
        (d) => `${d.field}:${d.code}`,
      );
    };
    expect(
      await codes({ subscription_id: subscription.id, metric: 'usage_quantity', threshold: '0' }),
    ).toEqual(['subscription_item_id:required', 'threshold:out_of_range']);
    expect(
      await codes({
        subscription_id: subscription.id,
        metric: 'usage_quantity',
        subscription_item_id: other.metered.id,
        threshold: '1',
      }),
    ).toEqual(['subscription_item_id:invalid_value']);
    // a negative threshold is out of range for every metric, not a malformed decimal
    for (const metric of ['credit_balance', 'usage_amount']) {
      expect(await codes({ subscription_id: subscription.id, metric, threshold: '-1' }), metric).toEqual([
        'threshold:out_of_range',
      ]);
    }
    // only a usage_quantity alert names an item
    expect(
      detailsOf(
        await post('/alerts', {
          subscription_id: subscription.id,
          metric: 'usage_amount',
          subscription_item_id: metered.id,
          threshold: '5',
        }),
      ),
    ).toEqual(['subscription_item_id']);
    expect(
      (await post('/alerts', { subscription_id: subscription.id, metric: 'credit_balance', threshold: '0' }))
        .statusCode,
    ).toBe(201);
    expect(
      detailsOf(
        await post('/alerts', {
          subscription_id: subscription.id,
          metric: 'usage_amount',
          threshold: '5',
          extra: 1,
        }),
      ),
    ).toEqual(['extra']);

    const theirs = await running(orgB);
    const foreign = await post('/alerts', {
      subscription_id: theirs.subscription.id,
      metric: 'usage_amount',
      threshold: '5',
    });
    expect(foreign.statusCode).toBe(404);
    const theirAlert = await createAlert(
      { subscription_id: theirs.subscription.id, metric: 'usage_amount', threshold: '5' },
      orgB.apiKey,
    );
    expect((await get(`/alerts/${theirAlert.id}`)).statusCode).toBe(404);
    // a list filtered on another organization's customer or subscription shows none of its alerts
    for (const filter of [`customer_id=${theirs.customerId}`, `subscription_id=${theirs.subscription.id}`]) {
      const listed = (await get(`/alerts?${filter}`)).json();
      expect(listed.data, filter).toEqual([]);
      expect(listed.pagination.total, filter).toBe(0);
    }
    expect(
      (await api.request({ method: 'DELETE', path: `/alerts/${theirAlert.id}`, key: orgA.apiKey }))
        .statusCode,
    ).toBe(404);
    expect((await get(`/alerts/${theirAlert.id}`, orgB.apiKey)).statusCode).toBe(200);
  });

  it('bounds the name at 255 characters and the threshold at 30 integer and 8 fractional digits', async () => {
    const { subscription } = await running();
    const base = { subscription_id: subscription.id, metric: 'usage_amount' };
    const codes = async (body: Record<string, unknown>) => {
      const response = await post('/alerts', { ...base, ...body });
      detailsOf(response);
      return (response.json() as { details: { field: string; code: string }[] }).details.map(
        (d) => `${d.field}:${d.code}`,
      );
    };
    expect(await codes({ threshold: '5', name: 'x'.repeat(256) })).toEqual(['name:too_long']);
    // text Postgres cannot store is refused before it reaches the database
    expect(await codes({ threshold: '5', name: 'a\u0000b' })).toEqual(['name:invalid_value']);
    // an id past 2^53 is refused once, naming its field
    expect(await codes({ subscription_id: 2 ** 60, threshold: '5' })).toEqual([
      'subscription_id:out_of_range',
    ]);
    expect(await codes({ metric: 'usage_quantity', subscription_item_id: 2 ** 60, threshold: '5' })).toEqual([
      'subscription_item_id:out_of_range',
    ]);
    for (const threshold of ['1.000000001', '1'.repeat(31), 5.5]) {
      expect(await codes({ threshold }), String(threshold)).toEqual([expect.stringMatching(/^threshold:/)]);
    }
    const made = await post('/alerts', { ...base, threshold: ' 5.12345678 ', name: 'x'.repeat(255) });
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json().data).toMatchObject({ threshold: '5.12345678', name: 'x'.repeat(255) });
    const whole = await post('/alerts', { ...base, threshold: 7 });
    expect(whole.statusCode, whole.body).toBe(201);
    expect(whole.json().data.threshold).toBe('7.00000000');
  });

  it('usage_quantity refuses an item a change removed from the subscription', async () => {
    const { subscription, metered, licensed } = await running();
    const changed = await post(`/subscriptions/${subscription.id}/changes`, { items: [{ id: licensed.id }] });
    expect(changed.statusCode, changed.body).toBe(200);
    const response = await post('/alerts', {
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: metered.id,
      threshold: '1',
    });
    expect(detailsOf(response)).toEqual(['subscription_item_id']);
    expect((await get(`/alerts?subscription_id=${subscription.id}`)).json().data).toEqual([]);
  });

  it('an alert id that is no UUID is a 404 to read and to delete, like a missing one', async () => {
    for (const id of ['not-an-alert', '12345']) {
      const read = await get(`/alerts/${id}`);
      expect(read.statusCode, read.body).toBe(404);
      expect(read.json().error_code).toBe('NOT_FOUND');
      const deleted = await api.request({ method: 'DELETE', path: `/alerts/${id}`, key: orgA.apiKey });
      expect(deleted.statusCode, deleted.body).toBe(404);
      expect(deleted.json().error_code).toBe('NOT_FOUND');
    }
  });

  it("in a customer's scope (the portal): its subscriptions, usage_amount only, its alerts only", async () => {
    const mine = await running();
    const theirs = await running();
    const scope = { customerId: mine.customerId, usageAmountOnly: true };
    const make = (subscriptionId: number, metric = 'usage_amount') =>
      createScopedAlert(
        db(),
        api.usage.readStores,
        orgA.orgId,
        { subscription_id: subscriptionId, metric, threshold: '5' },
        scope,
      ).then(
        (alert) => alert.status,
        (error: { code?: string; details?: { field: string }[] }) =>
          error.details?.map((d) => d.field).join() ?? error.code,
      );
    expect(await make(mine.subscription.id)).toBe('OK');
    // another customer's subscription of the same organization: not found
    expect(await make(theirs.subscription.id)).toBe('NOT_FOUND');
    expect(await make(mine.subscription.id, 'credit_balance')).toBe('metric');
    // deleting: only this customer's alerts
    const theirAlert = await createAlert({
      subscription_id: theirs.subscription.id,
      metric: 'usage_amount',
      threshold: '5',
    });
    await expect(
      deleteAlert(db(), orgA.orgId, theirAlert.id, { customerId: mine.customerId }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await get(`/alerts/${theirAlert.id}`)).statusCode).toBe(200);
  });

  it('lists newest first with filters, and deletes', async () => {
    const { customerId, subscription, metered } = await running();
    const first = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_amount',
      threshold: '1000',
    });
    const secondAlert = await createAlert({
      subscription_id: subscription.id,
      metric: 'usage_quantity',
      subscription_item_id: metered.id,
      threshold: '1',
    });
    await report(metered.id, 2);
    await eventually(async () =>
      expect((await get(`/alerts/${secondAlert.id}`)).json().data.status).toBe('TRIGGERED'),
    );
    const all = (await get(`/alerts?subscription_id=${subscription.id}`)).json();
    expect(all.data.map((a: Alert) => a.id)).toEqual([secondAlert.id, first.id]);
    expect(all.pagination).toMatchObject({ total: 2, has_more: false });
    expect(
      (await get(`/alerts?customer_id=${customerId}&status=TRIGGERED`)).json().data.map((a: Alert) => a.id),
    ).toEqual([secondAlert.id]);
    expect((await get('/alerts?status=SNOOZED')).statusCode).toBe(422);
    const deleted = await api.request({ method: 'DELETE', path: `/alerts/${first.id}`, key: orgA.apiKey });
    expect(deleted.statusCode).toBe(204);
    expect((await get(`/alerts/${first.id}`)).statusCode).toBe(404);
  });

  describe('route checks', () => {
    let alertId: string;
    beforeAll(async () => {
      const { subscription } = await running();
      alertId = (
        await createAlert({ subscription_id: subscription.id, metric: 'usage_amount', threshold: '9' })
      ).id;
    });
    runCommonRouteTests(() => ({
      api,
      key: orgA.apiKey,
      request: { method: 'GET', path: `/alerts/${alertId}` },
    }));
    runCommonRouteTests(() => ({ api, key: orgA.apiKey, request: { method: 'GET', path: '/alerts' } }));
  });
});
