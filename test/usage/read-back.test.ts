import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  getSubscriptionsItemQuantities,
  getSubscriptionsUsage,
  getSubscriptionUsage,
  runBilling,
  usageSource,
} from '../../libs/billing/index.js';
import { changeSubscription } from '../../libs/subscriptions/index.js';
import { PostgresUsageAggregator, type UsageReadStores } from '../../libs/usage/index.js';
import {
  basicCatalog,
  customerIn,
  invoicesOf,
  productIn,
  recordUsage,
  subscribe,
} from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/**
 * The usage read-back in the embedded mode (docs/architecture.md, "The usage read-back"): in-process log, totals from Postgres,
 * `as_of` = now. The distributed mode (Kafka, sinks, ClickHouse) is read-back-distributed.test.ts.
 */

let api: TestApi;
let org: TestOrg;
let other: TestOrg;
const DAY = 86_400_000;
const today = Math.floor(Date.now() / DAY) * DAY;
/** The running period began three days ago. */
const start = new Date(today - 3 * DAY);

let subscriptionId: number;
let meteredItem: number;
let licensedOnly: number;

beforeAll(async () => {
  api = await startTestApi({ redis: false });
  const db = api.platform.db;
  org = await createTestOrg(db);
  other = await createTestOrg(db);
  const { seats, apiCalls } = await basicCatalog(db, org.orgId);
  const customerId = await customerIn(db, org.orgId, { country: 'CA', state_province: 'QC' });
  const subscription = await subscribe(
    db,
    org.orgId,
    {
      customer_id: customerId,
      items: [
        { product_id: seats, quantity: 2 },
        { product_id: apiCalls, included_units: '10' },
      ],
      start_date: start,
    },
    start,
  );
  subscriptionId = subscription.id;
  meteredItem = subscription.items.find((item) => item.usage_type === 'metered')!.id;
  licensedOnly = (
    await subscribe(
      db,
      org.orgId,
      { customer_id: customerId, items: [{ product_id: seats }], start_date: start },
      start,
    )
  ).id;
}, 60_000);
afterAll(() => api?.close());

async function post(quantity: number, timestamp: Date, key = randomUUID()) {
  const response = await api.request({
    method: 'POST',
    path: '/usage/events',
    key: org.apiKey,
    headers: { 'idempotency-key': key },
    payload: { subscription_item_id: meteredItem, quantity, timestamp: timestamp.toISOString() },
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().data as { id: string };
}

const get = (path: string, key = org.apiKey) => api.request({ method: 'GET', path, key });

describe('usage read-back, embedded mode', () => {
  const posted: { id: string }[] = [];

  it('sums every posted event of the period, prices it as the billing run does, and now is as_of', async () => {
    posted.push(await post(30, new Date(start.getTime() + 1000)));
    posted.push(await post(45.5, new Date(today + 1000)));
    posted.push(await post(2, new Date(today - DAY + 5000)));
    // before the subscription (so its item) started: no period would count it, so it is refused
    const early = await api.request({
      method: 'POST',
      path: '/usage/events',
      key: org.apiKey,
      headers: { 'idempotency-key': randomUUID() },
      payload: {
        subscription_item_id: meteredItem,
        quantity: 1000,
        timestamp: new Date(start.getTime() - 1).toISOString(),
      },
    });
    expect(early.statusCode, early.body).toBe(422);
    expect(early.json().details).toMatchObject([{ field: 'timestamp', code: 'out_of_range' }]);

    const before = Date.now();
    const response = await get(`/subscriptions/${subscriptionId}/usage`);
    expect(response.statusCode, response.body).toBe(200);
    const usage = response.json().data;
    expect(usage).toMatchObject({
      object: 'subscription_usage',
      subscription_id: subscriptionId,
      period_start: start.toISOString(),
      currency: 'CAD',
      items: [
        {
          subscription_item_id: meteredItem,
          product_name: 'API calls',
          unit_label: 'calls',
          quantity: '77.50000000',
          included_units: '10.00000000',
          billable_quantity: '67.50000000',
          // graduated: 67.5 at 1.00 (the first 100 units)
          amount: '67.50000000',
        },
      ],
      total_amount: '67.50000000',
    });
    expect(Date.parse(usage.as_of)).toBeGreaterThanOrEqual(before);
    expect(usage.lag_seconds).toBeLessThan(1);
  });

  it('never answers a negative lag: a reading clock behind as_of (another host) gives 0', async () => {
    const behind = new Date(Date.now() - 60_000);
    const usage = await getSubscriptionUsage(
      api.platform.db,
      api.usage.readStores,
      org.orgId,
      subscriptionId,
      {
        now: behind,
      },
    );
    expect(Date.parse(usage.as_of)).toBeGreaterThan(behind.getTime());
    expect(usage.lag_seconds).toBe(0);
  });

  it('names the period before the first one empty, at the start: never before the subscription began', async () => {
    const previous = await get(`/subscriptions/${subscriptionId}/usage?period=previous`);
    expect(previous.statusCode, previous.body).toBe(200);
    expect(previous.json().data).toMatchObject({
      period_start: start.toISOString(),
      period_end: start.toISOString(),
      items: [{ subscription_item_id: meteredItem, quantity: '0.00000000' }],
      total_amount: '0.00000000',
    });
  });

  it('reads several subscriptions at once as it reads each; missing and foreign ones are absent', async () => {
    const db = api.platform.db;
    const stores = api.usage.readStores;
    // a third subscription in another window, with an item that no event touched
    const customerId = await customerIn(db, org.orgId, { country: 'US', state_province: 'OR' });
    const { apiCalls } = await basicCatalog(db, org.orgId);
    const later = await subscribe(
      db,
      org.orgId,
      { customer_id: customerId, items: [{ product_id: apiCalls }], start_date: new Date(today - DAY) },
      new Date(today - DAY),
    );
    const ids = [subscriptionId, licensedOnly, later.id];
    const readFrom = Date.now();
    const many = await getSubscriptionsUsage(db, stores, [
      ...ids.map((subscriptionId) => ({ orgId: org.orgId, subscriptionId })),
      { orgId: other.orgId, subscriptionId }, // another organization's key to the same id
      { orgId: org.orgId, subscriptionId: 987_654_321 },
    ]);
    expect([...many.keys()].sort((a, b) => a - b)).toEqual([...ids].sort((a, b) => a - b));
    for (const id of ids) {
      const one = await getSubscriptionUsage(db, stores, org.orgId, id);
      // lag_seconds depends on the moment of reading
      expect({ ...many.get(id), lag_seconds: 0, as_of: '' }).toEqual({ ...one, lag_seconds: 0, as_of: '' });
      // embedded: as_of is the moment of reading
      expect(Date.parse(many.get(id)!.as_of)).toBeGreaterThanOrEqual(readFrom);
      expect(Date.parse(many.get(id)!.as_of)).toBeLessThanOrEqual(Date.parse(one.as_of));
    }
    expect(many.get(subscriptionId)!.items[0]!.quantity).toBe('77.50000000');
  });

  it('reads as_of before any total, so every event it vouches for is counted', async () => {
    const db = api.platform.db;
    const stores = api.usage.readStores;
    let calls: string[] = [];
    const recording: UsageReadStores = {
      ...stores,
      async asOf() {
        const at = await stores.asOf();
        calls.push('as_of');
        return at;
      },
      aggregator: {
        totals(...args) {
          calls.push('totals');
          return stores.aggregator.totals(...args);
        },
        daily(...args) {
          calls.push('daily');
          return stores.aggregator.daily(...args);
        },
      },
    };
    const key = [{ orgId: org.orgId, subscriptionId }];
    const reads = [
      () => getSubscriptionUsage(db, recording, org.orgId, subscriptionId),
      () => getSubscriptionsUsage(db, recording, key),
      () => getSubscriptionsItemQuantities(db, recording, key),
    ];
    for (const read of reads) {
      calls = [];
      await read();
      expect(calls).toEqual(['as_of', 'totals']);
    }
  });

  it("reads items' quantities alone as the read-back counts them: an item added or removed within the period counts its time on it", async () => {
    const db = api.platform.db;
    const stores = api.usage.readStores;
    // an organization of its own: the event lists below read the shared one's
    const { orgId } = await createTestOrg(db);
    const customerId = await customerIn(db, orgId, { country: 'US', state_province: 'OR' });
    const { seats, apiCalls } = await basicCatalog(db, orgId);
    const lookups = await productIn(db, orgId, {
      name: 'Lookups',
      pricing_type: 'usage',
      unit_price: '0.01',
      currency: 'CAD',
      unit_label: 'lookups',
    });
    const subscription = await subscribe(
      db,
      orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: apiCalls }, { product_id: lookups }],
        start_date: start,
      },
      start,
    );
    const [seatItem, removed, kept] = subscription.items.map((item) => item.id) as [number, number, number];
    const changedAt = new Date(today - DAY);
    const change = await changeSubscription(db, {
      subscriptionId: subscription.id,
      orgId,
      change: { items: [{ id: seatItem }, { id: kept }, { product_id: apiCalls }], proration: 'none' },
      now: changedAt,
    });
    const added = change.subscription.items.find(
      (item) => item.product_id === apiCalls && item.id !== removed,
    )!.id;
    const before = new Date(changedAt.getTime() - 3_600_000).toISOString();
    const after = new Date(changedAt.getTime() + 3_600_000).toISOString();
    for (const item of [removed, added, kept]) {
      await recordUsage(db, orgId, item, '2', before);
      await recordUsage(db, orgId, item, '3', after);
    }

    const readFrom = Date.now();
    const read = await getSubscriptionsItemQuantities(db, stores, [
      { orgId, subscriptionId: subscription.id },
      { orgId: other.orgId, subscriptionId: subscription.id },
      { orgId: org.orgId, subscriptionId: licensedOnly },
    ]);
    expect([...read.keys()].sort((a, b) => a - b)).toEqual(
      [subscription.id, licensedOnly].sort((a, b) => a - b),
    );
    const quantities = read.get(subscription.id)!;
    // the item added counts from its start, the one removed until its removal, the one kept all period
    expect(Object.fromEntries(quantities.quantities)).toEqual({
      [removed]: '2.00000000',
      [added]: '3.00000000',
      [kept]: '5.00000000',
    });
    expect(quantities.periodStart).toEqual(start);
    expect(read.get(licensedOnly)!.quantities.size).toBe(0);
    // what the read-back shows
    const usage = await getSubscriptionUsage(db, stores, orgId, subscription.id);
    expect(Object.fromEntries(usage.items.map((item) => [item.subscription_item_id, item.quantity]))).toEqual(
      Object.fromEntries(quantities.quantities),
    );
    // embedded: as_of is the moment of reading
    expect(quantities.asOf.getTime()).toBeGreaterThanOrEqual(readFrom);
    expect(quantities.asOf.getTime()).toBeLessThanOrEqual(Date.parse(usage.as_of));
  });

  it('gives a daily series with the zero days, and the upcoming invoice with tax', async () => {
    const daily = await get(
      `/subscriptions/${subscriptionId}/usage/daily?from=${iso(start.getTime() - DAY)}&to=${iso(today)}`,
    );
    expect(daily.statusCode, daily.body).toBe(200);
    expect(daily.json().data).toEqual([
      { date: iso(start.getTime() - DAY), subscription_item_id: meteredItem, quantity: '0.00000000' },
      { date: iso(start.getTime()), subscription_item_id: meteredItem, quantity: '30.00000000' },
      { date: iso(start.getTime() + DAY), subscription_item_id: meteredItem, quantity: '0.00000000' },
      { date: iso(today - DAY), subscription_item_id: meteredItem, quantity: '2.00000000' },
      { date: iso(today), subscription_item_id: meteredItem, quantity: '45.50000000' },
    ]);

    const upcoming = await get(`/subscriptions/${subscriptionId}/upcoming-invoice`);
    expect(upcoming.statusCode, upcoming.body).toBe(200);
    expect(upcoming.json().data).toMatchObject({
      object: 'upcoming_invoice',
      subscription_id: subscriptionId,
      period_start: start.toISOString(),
      currency: 'CAD',
      subtotal: '87.50000000', // 2 seats x 10.00 + 67.50
      tax_type: 'GST_QST',
    });
    expect(upcoming.json().data.lines).toHaveLength(2);
  });

  it('lists events newest first with filters and stable paging, and reads one', async () => {
    const all = await get(`/usage/events?subscription_item_id=${meteredItem}&limit=100`);
    expect(all.statusCode, all.body).toBe(200);
    const events = all.json().data as { id: string; timestamp: string; status: string }[];
    expect(events).toHaveLength(3);
    const order = [...events].sort(
      (a, b) => b.timestamp.localeCompare(a.timestamp) || b.id.localeCompare(a.id),
    );
    expect(events.map((e) => e.id)).toEqual(order.map((e) => e.id));
    expect(all.json().pagination).toEqual({ limit: 100, offset: 0, total: 3, has_more: false });

    const pages = [];
    for (let offset = 0; offset < 3; offset += 2) {
      const page = await get(`/usage/events?limit=2&offset=${offset}`);
      pages.push(...page.json().data.map((e: { id: string }) => e.id));
    }
    expect(pages).toEqual(events.map((e) => e.id));

    const window = await get(
      `/usage/events?from=${encodeURIComponent(start.toISOString())}&to=${encodeURIComponent(new Date(today).toISOString())}`,
    );
    expect(
      window
        .json()
        .data.map((e: { quantity: number }) => e.quantity)
        .sort(),
    ).toEqual([2, 30]);
    // [from, to): an event at exactly `from` is in, one at exactly `to` out
    const exact = await get(
      `/usage/events?from=${encodeURIComponent(new Date(start.getTime() + 1000).toISOString())}&to=${encodeURIComponent(new Date(today + 1000).toISOString())}`,
    );
    const exactIds = exact.json().data.map((e: { id: string }) => e.id);
    expect(exactIds.sort()).toEqual([posted[0]!.id, posted[2]!.id].sort());

    const one = await get(`/usage/events/${posted[0]!.id}`);
    expect(one.json().data).toMatchObject({
      id: posted[0]!.id,
      quantity: 30,
      status: 'ACTIVE',
      voided_at: null,
    });
  });

  it('voids an event: it disappears from usage, daily and the upcoming invoice; a second void is the same', async () => {
    const target = posted[1]!; // 45.5 today
    const voided = await api.request({
      method: 'POST',
      path: `/usage/events/${target.id}/void`,
      key: org.apiKey,
    });
    expect(voided.statusCode, voided.body).toBe(200);
    expect(voided.json().data).toMatchObject({ id: target.id, status: 'VOIDED' });
    const again = await api.request({
      method: 'POST',
      path: `/usage/events/${target.id}/void`,
      key: org.apiKey,
    });
    expect(again.statusCode).toBe(200);
    expect(again.json().data).toEqual(voided.json().data);

    const usage = (await get(`/subscriptions/${subscriptionId}/usage`)).json().data;
    expect(usage.items[0].quantity).toBe('32.00000000');
    const daily = (await get(`/subscriptions/${subscriptionId}/usage/daily`)).json().data;
    expect(daily.find((d: { date: string }) => d.date === iso(today)).quantity).toBe('0.00000000');
    const upcoming = (await get(`/subscriptions/${subscriptionId}/upcoming-invoice`)).json().data;
    expect(upcoming.subtotal).toBe('42.00000000'); // 20.00 + 22 billable calls

    const listed = await get('/usage/events?status=VOIDED');
    expect(listed.json().data.map((e: { id: string }) => e.id)).toEqual([target.id]);
    const active = await get('/usage/events?status=ACTIVE');
    expect(active.json().pagination.total).toBe(2);
  });

  it('keeps voided usage out of the billing run, and refuses to void a posted period (409 naming it)', async () => {
    const db = api.platform.db;
    const summary = await runBilling(db, {
      usage: usageSource(new PostgresUsageAggregator(db)),
      orgId: org.orgId,
      subscriptionIds: [subscriptionId],
      now: new Date(Date.parse(start.toISOString()) + 40 * DAY),
    });
    expect(summary.invoices_created).toBeGreaterThanOrEqual(1);
    const [invoice] = await invoicesOf(db, subscriptionId);
    const { rows } = await db.query<{ subtotal: string }>(
      'SELECT subtotal::text FROM invoices WHERE id = $1',
      [invoice!.id],
    );
    expect(rows[0]!.subtotal).toBe('42.00000000');

    const refused = await api.request({
      method: 'POST',
      path: `/usage/events/${posted[0]!.id}/void`,
      key: org.apiKey,
    });
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.json()).toMatchObject({ error_code: 'CONFLICT' });
    expect(refused.json().message ?? refused.body).toContain(invoice!.invoice_number);
  });

  it('answers a licensed-only subscription with no items', async () => {
    const usage = await get(`/subscriptions/${licensedOnly}/usage?period=previous`);
    expect(usage.statusCode, usage.body).toBe(200);
    expect(usage.json().data).toMatchObject({ items: [], total_amount: '0.00000000' });
    expect((await get(`/subscriptions/${licensedOnly}/usage/daily`)).json().data).toEqual([]);
  });

  it('refuses bad input with 422 and details naming the field', async () => {
    const base = `/subscriptions/${subscriptionId}/usage/daily`;
    const cases: [string, string][] = [
      [`${base}?from=2026-02-10&to=2026-02-01`, 'to'],
      [`${base}?from=2026-01-01&to=2026-04-04`, 'to'], // 93 days is the most: this is 94
      [`${base}?from=2026-13-01`, 'from'],
      [`${base}?to=yesterday`, 'to'],
      [`${base}?subscription_item_id=abc`, 'subscription_item_id'],
      [`/subscriptions/${subscriptionId}/usage?period=next`, 'period'],
      ['/usage/events?from=2026-02-10T00:00:00Z&to=2026-02-01T00:00:00Z', 'to'],
      ['/usage/events?from=2026-02-10', 'from'],
      ['/usage/events?status=DELETED', 'status'],
    ];
    for (const [path, field] of cases) {
      const response = await get(path);
      expect(response.statusCode, `${path}: ${response.body}`).toBe(422);
      expect(response.json().details.map((d: { field: string }) => d.field)).toContain(field);
    }
    // `to` equal to `from` is not before it: an empty window, not an error
    const empty = await get('/usage/events?from=2026-02-10T00:00:00Z&to=2026-02-10T00:00:00Z');
    expect(empty.statusCode, empty.body).toBe(200);
    expect(empty.json().data).toEqual([]);
    const exactly93 = await get(`${base}?from=2026-01-01&to=2026-04-03`);
    expect(exactly93.statusCode).toBe(200);
    expect(exactly93.json().data).toHaveLength(93);
  });

  it('names a window whose end is before its start out_of_range on `to`, on the event list as on the daily series', async () => {
    // details[].code is a stable code clients branch on (docs/decisions.md, "Validation errors
    // name fields with stable codes"): the route checks the event list's window itself
    for (const path of [
      '/usage/events?from=2026-02-10T00:00:00Z&to=2026-02-09T23:59:59Z',
      `/subscriptions/${subscriptionId}/usage/daily?from=2026-02-10&to=2026-02-09`,
    ]) {
      const response = await get(path);
      expect(response.statusCode, path).toBe(422);
      expect(response.json().details, path).toEqual([
        { field: 'to', message: 'Must not be before from.', code: 'out_of_range' },
      ]);
    }
  });

  it('defaults the daily series to the running period, up to the day before its end', async () => {
    const usage = (await get(`/subscriptions/${subscriptionId}/usage`)).json().data;
    const first = Date.parse(usage.period_start);
    const end = Date.parse(usage.period_end);
    const daily = await get(`/subscriptions/${subscriptionId}/usage/daily`);
    expect(daily.statusCode, daily.body).toBe(200);
    const dates = daily.json().data.map((point: { date: string }) => point.date);
    expect(dates).toHaveLength((end - first) / DAY);
    expect(dates[0]).toBe(iso(first));
    expect(dates.at(-1)).toBe(iso(end - DAY));
  });

  it('keeps the 93 days up to `to` when `from` is omitted and the period began longer ago', async () => {
    const usage = (await get(`/subscriptions/${subscriptionId}/usage`)).json().data;
    const first = Date.parse(usage.period_start);
    const base = `/subscriptions/${subscriptionId}/usage/daily`;
    // 94 days from the period's first day to `to`, inclusive: the first of them is left out
    const to = first + 93 * DAY;
    const clipped = await get(`${base}?to=${iso(to)}`);
    expect(clipped.statusCode, clipped.body).toBe(200);
    const dates = clipped.json().data.map((point: { date: string }) => point.date);
    expect(dates).toHaveLength(93);
    expect(dates[0]).toBe(iso(first + DAY));
    expect(dates.at(-1)).toBe(iso(to));
    // 93 days inclusive: kept whole
    const whole = await get(`${base}?to=${iso(to - DAY)}`);
    expect(whole.json().data.map((point: { date: string }) => point.date)[0]).toBe(iso(first));
    expect(whole.json().data).toHaveLength(93);
  });

  it('answers the last and the first day a client can name, though the query ends the day after (year 10000)', async () => {
    const base = `/subscriptions/${subscriptionId}/usage/daily`;
    // the query's end is the day after `to`: in year 10000 for the last day a client can name
    const lastDay = await get(`${base}?from=9999-12-31&to=9999-12-31`);
    expect(lastDay.statusCode, lastDay.body).toBe(200);
    expect(lastDay.json().data).toEqual([
      { date: '9999-12-31', subscription_item_id: meteredItem, quantity: '0.00000000' },
    ]);
    const lastDays = await get(`${base}?from=9999-10-01&to=9999-12-31`);
    expect(lastDays.statusCode, lastDays.body).toBe(200);
    expect(lastDays.json().data).toHaveLength(92);
    const firstDay = await get(`${base}?from=0001-01-01&to=0001-01-01`);
    expect(firstDay.json().data).toEqual([
      { date: '0001-01-01', subscription_item_id: meteredItem, quantity: '0.00000000' },
    ]);
  });

  it("answers 404 for another organization's subscription or event, on every route", async () => {
    const paths = [
      `/subscriptions/${subscriptionId}/usage`,
      `/subscriptions/${subscriptionId}/usage/daily`,
      `/subscriptions/${subscriptionId}/upcoming-invoice`,
      `/usage/events/${posted[0]!.id}`,
    ];
    for (const path of paths) {
      const response = await get(path, other.apiKey);
      expect(response.statusCode, `${path}: ${response.body}`).toBe(404);
    }
    const voided = await api.request({
      method: 'POST',
      path: `/usage/events/${posted[2]!.id}/void`,
      key: other.apiKey,
    });
    expect(voided.statusCode).toBe(404);
    expect((await get(`/usage/events/${posted[2]!.id}`)).json().data.status).toBe('ACTIVE');
    const list = await get('/usage/events', other.apiKey);
    expect(list.json().data).toEqual([]);
    for (const path of [
      '/subscriptions/999999999/usage',
      `/usage/events/${randomUUID()}`,
      '/usage/events/nope',
    ]) {
      expect((await get(path)).statusCode).toBe(404);
    }
  });

  it('narrows the daily series and the event list to one item; an item not metered on the subscription is a 404', async () => {
    const db = api.platform.db;
    const customerId = await customerIn(db, org.orgId, { country: 'US', state_province: 'OR' });
    const { seats, apiCalls } = await basicCatalog(db, org.orgId);
    const { apiCalls: storage } = await basicCatalog(db, org.orgId);
    const two = await subscribe(
      db,
      org.orgId,
      {
        customer_id: customerId,
        items: [{ product_id: seats }, { product_id: apiCalls }, { product_id: storage }],
        start_date: start,
      },
      start,
    );
    const [first, second] = two.items.filter((item) => item.usage_type === 'metered').map((item) => item.id);
    const seatItem = two.items.find((item) => item.usage_type === 'licensed')!.id;
    for (const [item, quantity] of [
      [first!, 3],
      [second!, 4],
    ] as const) {
      const response = await api.request({
        method: 'POST',
        path: '/usage/events',
        key: org.apiKey,
        headers: { 'idempotency-key': randomUUID() },
        payload: { subscription_item_id: item, quantity, timestamp: new Date(today + 1000).toISOString() },
      });
      expect(response.statusCode, response.body).toBe(201);
    }
    const base = `/subscriptions/${two.id}/usage/daily?from=${iso(today)}&to=${iso(today)}`;
    expect((await get(base)).json().data).toHaveLength(2);
    const one = await get(`${base}&subscription_item_id=${second}`);
    expect(one.statusCode, one.body).toBe(200);
    expect(one.json().data).toEqual([
      { date: iso(today), subscription_item_id: second, quantity: '4.00000000' },
    ]);
    // a licensed item of the subscription, and a metered item of another subscription
    for (const item of [seatItem, meteredItem]) {
      const refused = await get(`${base}&subscription_item_id=${item}`);
      expect(refused.statusCode, refused.body).toBe(404);
      expect(refused.json().error_code).toBe('NOT_FOUND');
    }
    const listed = await get(`/usage/events?subscription_item_id=${second}`);
    expect(
      listed
        .json()
        .data.map((e: { subscription_item_id: number; quantity: number }) => [
          e.subscription_item_id,
          e.quantity,
        ]),
    ).toEqual([[second, 4]]);
  });
});

describe('a void at the boundary of an invoiced period', () => {
  it('is a 409 at the last millisecond of the invoiced period (its last day), and voids the first of the next', async () => {
    const db = api.platform.db;
    const { apiCalls } = await basicCatalog(db, org.orgId);
    const customerId = await customerIn(db, org.orgId, { country: 'CA', state_province: 'QC' });
    const subscription = await subscribe(
      db,
      org.orgId,
      { customer_id: customerId, items: [{ product_id: apiCalls }], start_date: start },
      start,
    );
    const item = subscription.items[0]!.id;
    await runBilling(db, {
      usage: usageSource(new PostgresUsageAggregator(db)),
      orgId: org.orgId,
      subscriptionIds: [subscription.id],
      now: new Date(start.getTime() + 40 * DAY),
    });
    const { rows } = await db.query<{ current_period_start: Date }>(
      'SELECT current_period_start FROM subscriptions WHERE id = $1',
      [subscription.id],
    );
    const boundary = rows[0]!.current_period_start.getTime();
    expect(boundary).toBeGreaterThan(start.getTime());
    const event = async (ms: number) => {
      const response = await api.request({
        method: 'POST',
        path: '/usage/events',
        key: org.apiKey,
        headers: { 'idempotency-key': randomUUID() },
        payload: { subscription_item_id: item, quantity: 1, timestamp: new Date(ms).toISOString() },
      });
      expect(response.statusCode, response.body).toBe(201);
      return response.json().data.id as string;
    };
    const voidOf = (id: string) =>
      api.request({ method: 'POST', path: `/usage/events/${id}/void`, key: org.apiKey });
    const last = await voidOf(await event(boundary - 1));
    expect(last.statusCode, last.body).toBe(409);
    const first = await voidOf(await event(boundary));
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().data.status).toBe('VOIDED');
  });
});

describe('the read-back in the documents', () => {
  it('llms.txt lists every new route with an example of its answer', async () => {
    const text = (await api.request({ method: 'GET', path: '/llms.txt' })).body;
    for (const route of [
      'GET /subscriptions/{subscription_id}/usage',
      'GET /subscriptions/{subscription_id}/usage/daily',
      'GET /subscriptions/{subscription_id}/upcoming-invoice',
      'GET /usage/events',
      'GET /usage/events/{event_id}',
      'POST /usage/events/{event_id}/void',
    ]) {
      expect(text).toContain(route);
    }
    for (const tool of ['get_subscription_usage', 'preview_upcoming_invoice']) expect(text).toContain(tool);
    // each with an example answer, from the schema's own example
    for (const object of [
      '"object":"subscription_usage"',
      '"object":"upcoming_invoice"',
      '"status":"VOIDED"',
    ]) {
      expect(text).toContain(object);
    }
    expect(text).toContain('Example answer: `{"data":[{"date":"2026-11-20"');
  });
});

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
