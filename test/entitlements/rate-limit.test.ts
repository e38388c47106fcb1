import { afterEach, describe, expect, it } from 'vitest';
import type { Entitlement } from '../../libs/schemas/index.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { monitorRedis } from '../helpers/redis-monitor.js';
import { testServices } from '../helpers/services.js';
import { eventually } from '../usage/support.js';

/*
 * The entitlement check counts its request against the organization's hourly limit in the store
 * call that reads its counters (docs/decisions.md, "The entitlement check's round trips"), not in
 * the authentication hook: the limit, its 429 and its headers must be exactly those of every other
 * route, in both stores (Redis; embedded, the process's memory).
 */

const HOUR = 3_600_000;
// 10:49:30 UTC on some day: 10 min 30 s before the window ends
const T0 = Date.UTC(2026, 10, 22, 10, 49, 30);

let api: TestApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

/** An organization allowed `limit` requests an hour, a customer with metered API calls (limit 10). */
async function setup(testApi: TestApi, limit: number) {
  const db = testApi.platform.db;
  const org = await createTestOrg(db, { requestsPerHour: limit });
  const { seats, apiCalls } = await basicCatalog(db, org.orgId);
  const customerId = await customerIn(db, org.orgId);
  await subscribe(
    db,
    org.orgId,
    {
      customer_id: customerId,
      items: [
        { product_id: seats, quantity: 1 },
        { product_id: apiCalls, usage_limit: '10' },
      ],
      start_date: new Date(Date.now() - 86_400_000),
    },
    new Date(),
  );
  const get = (path: string) => testApi.request({ method: 'GET', path, key: org.apiKey });
  return { org, customerId, apiCalls, seats, get };
}

describe.each(['redis', 'embedded'] as const)(
  'the entitlement check against the hourly limit (%s)',
  (store) => {
    it('counts every check, 404 and 503 included, with the headers; at the limit a 429 with Retry-After', async () => {
      let now = T0;
      api = await startTestApi({ redis: store === 'redis', now: () => now });
      const s = await setup(api, 6);
      const remaining: (string | undefined)[] = [];
      const statuses: number[] = [];
      const readStores = api.usage.readStores;
      const counter = readStores.counter;
      const check = `/customers/${s.customerId}/entitlements/${s.apiCalls}`;
      for (const path of [
        check,
        `/customers/${s.customerId}/entitlements/999999999`, // no item of it: 404
        `/customers/${s.customerId}/entitlements/not-a-number`, // 404
        `/customers/${s.customerId}/entitlements`,
        `/customers/999999999/entitlements/${s.apiCalls}`, // no such customer: 404
        `${check}?no-counter`, // the handler fails before it counts (503): counted as it is answered
      ]) {
        if (path.endsWith('?no-counter')) readStores.counter = undefined;
        const response = await s.get(path);
        readStores.counter = counter;
        statuses.push(response.statusCode);
        remaining.push(response.headers['x-ratelimit-remaining'] as string | undefined);
        expect(response.headers['x-ratelimit-limit'], path).toBe('6');
        expect(response.headers['x-ratelimit-reset'], path).toBe(String(Date.UTC(2026, 10, 22, 11) / 1000));
        expect(response.headers['ratelimit-policy'], path).toBe('"hourly";q=6;w=3600');
        expect(response.headers.ratelimit, path).toBe(`"hourly";r=${remaining.at(-1)};t=630`);
      }
      expect(statuses).toEqual([200, 404, 404, 200, 404, 503]);
      expect(remaining).toEqual(['5', '4', '3', '2', '1', '0']);

      // over the limit: refused by the store, then from the process's memory, on every path alike
      for (const path of [
        `/customers/${s.customerId}/entitlements/${s.apiCalls}`,
        `/customers/${s.customerId}/entitlements/${s.apiCalls}`,
        `/customers/${s.customerId}/entitlements`,
        `/customers/${s.customerId}/entitlements/not-a-number`,
        `${check}?no-counter`,
        '/meta',
      ]) {
        if (path.endsWith('?no-counter')) readStores.counter = undefined;
        const limited = await s.get(path);
        readStores.counter = counter;
        expect(limited.statusCode, path).toBe(429);
        expect(limited.headers['retry-after'], path).toBe(String(10 * 60 + 30));
        expect(limited.headers['x-ratelimit-remaining'], path).toBe('0');
        expect(limited.json(), path).toMatchObject({
          error_code: 'RATE_LIMITED',
          request_id: limited.headers['x-request-id'],
        });
      }

      // the next hour serves the organization again; a refused check was not counted
      now += HOUR;
      const next = await s.get(`/customers/${s.customerId}/entitlements/${s.apiCalls}`);
      expect(next.statusCode).toBe(200);
      expect(next.json().data).toMatchObject({ has_access: true, used: '0.00000000' });
      expect(next.headers['x-ratelimit-remaining']).toBe('5');
    });

    it("a check whose handler failed before its count, over the limit, answers the 429's own Retry-After", async () => {
      api = await startTestApi({ redis: store === 'redis', now: () => T0 });
      const s = await setup(api, 1);
      const readStores = api.usage.readStores;
      const counter = readStores.counter;
      const check = `/customers/${s.customerId}/entitlements/${s.apiCalls}`;
      readStores.counter = undefined; // the handler fails (503) before it counts
      try {
        const last = await s.get(check);
        expect(last.statusCode, last.body).toBe(503);
        expect(last.headers['x-ratelimit-remaining']).toBe('0');
        // The bucket is spent, but no refusal has told the process so: this one is counted as its
        // 503 is sent, refused, and the 503 (Retry-After: 1) replaced by the 429, which must say
        // when the hour resets, not when a dependency may be back.
        const over = await s.get(check);
        expect(over.statusCode, over.body).toBe(429);
        expect(over.headers['retry-after']).toBe(String(10 * 60 + 30));
        expect(over.headers['x-ratelimit-remaining']).toBe('0');
        expect(over.json()).toMatchObject({
          error_code: 'RATE_LIMITED',
          request_id: over.headers['x-request-id'],
        });
      } finally {
        readStores.counter = counter;
      }
    });

    it('checks sent at once: exactly the limit is served, the rest refused and not counted', async () => {
      api = await startTestApi({ redis: store === 'redis', now: () => T0 });
      const s = await setup(api, 3);
      const path = `/customers/${s.customerId}/entitlements/${s.apiCalls}`;
      // five checks in one turn: their counts go to the store together, decided as if one by one
      const responses = await Promise.all(Array.from({ length: 5 }, () => s.get(path)));
      expect(responses.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 429, 429]);
      expect(responses.map((r) => r.headers['x-ratelimit-remaining']).sort()).toEqual([
        '0',
        '0',
        '0',
        '1',
        '2',
      ]);
    });

    it('past the limit, a check of a customer not found is refused with 429, not answered 404', async () => {
      api = await startTestApi({ redis: store === 'redis', now: () => T0 });
      const s = await setup(api, 2);
      // a customer id that is no number is found by no query, and counted all the same
      for (const [path, status, remaining] of [
        ['/customers/not-a-number/entitlements', 404, '1'],
        [`/customers/${s.customerId}/entitlements/${s.apiCalls}`, 200, '0'],
      ] as const) {
        const served = await s.get(path);
        expect(served.statusCode, served.body).toBe(status);
        expect(served.headers['x-ratelimit-remaining'], path).toBe(remaining);
      }
      // the first refusal is the store's, in the check's own counter read: it wins over the 404 the
      // query answers, as for every other route
      const refused = await s.get(`/customers/999999999/entitlements/${s.apiCalls}`);
      expect(refused.statusCode, refused.body).toBe(429);
      expect(refused.json()).toMatchObject({ error_code: 'RATE_LIMITED' });
    });
  },
);

describe('the entitlement check on Redis', () => {
  it('waits for one Redis call: the request counted in the counter read', async () => {
    api = await startTestApi({ now: () => T0 });
    const s = await setup(api, 1000);
    const path = `/customers/${s.customerId}/entitlements/${s.apiCalls}`;
    // the first checks build the counters (this period's and, in the background, the next's)
    let first: Entitlement | undefined;
    for (let i = 0; i < 3; i++) {
      const response = await s.get(path);
      expect(response.statusCode).toBe(200);
      first = response.json().data;
    }
    const next = {
      orgId: s.org.orgId,
      subscriptionItemId: first!.subscription_item_id,
      startMs: Date.parse(first!.period_end),
      endMs: Date.parse(first!.period_end) + 28 * 86_400_000,
    };
    await eventually(async () => expect(await api!.usage.counter.isBuilt(next)).toBe(true), 20_000);

    const prefix = api.config.REDIS_KEY_PREFIX;
    const calls: string[][] = [];
    const monitor = await monitorRedis(testServices().redisUrl, (args) => {
      if (args.some((arg) => arg.startsWith(prefix))) calls.push(args);
    });
    try {
      const response = await s.get(path);
      expect(response.statusCode).toBe(200);
      expect(response.headers['x-ratelimit-remaining']).toBe('996');
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      monitor.close();
    }
    // one script call, counting the request and reading the counter (the commands it runs inside
    // are not sent by the client: MONITOR lists them after it, from "lua")
    const sent = calls.filter(([command]) => /^eval/i.test(command!));
    expect(sent).toHaveLength(1);
    expect(sent[0]!.filter((arg) => arg.startsWith(`${prefix}rl:`))).toHaveLength(1);
    expect(sent[0]!.filter((arg) => arg.startsWith(`${prefix}usage:counter:`))).toHaveLength(1);
  });
});
