import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueDeliveries } from '../../libs/webhooks/delivery.js';
import { fanOutOutbox, type WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { emit, type Receiver, registerEndpoint, startDispatcher, startReceiver } from './support.js';

describe('webhook delivery across endpoints', () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher | undefined;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    api = await startTestApi();
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await api?.close();
  });

  async function endpointOf(org: TestOrg, receiver: Receiver): Promise<void> {
    receivers.push(receiver);
    const response = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: org.apiKey,
      payload: { url: receiver.url, events: ['invoice.posted'] },
    });
    expect(response.statusCode, response.body).toBe(201);
  }

  it("does not let the backlog of an endpoint at its limit fill the claim's look-ahead", async () => {
    // no dispatcher yet: the claim is made by hand, with the busy endpoint's attempts given
    const [busy, other] = [await createTestOrg(api.platform.db), await createTestOrg(api.platform.db)];
    const create = async (org: TestOrg, path: string) => {
      const response = await api.request({
        method: 'POST',
        path: '/webhook-endpoints',
        key: org.apiKey,
        payload: { url: `http://127.0.0.1:9/${path}`, events: ['invoice.posted'] },
      });
      expect(response.statusCode, response.body).toBe(201);
      return response.json().data.id as string;
    };
    const busyEndpoint = await create(busy, 'busy');
    const otherEndpoint = await create(other, 'other');
    // more due events at the busy endpoint than the look-ahead (4 x the claim limit) holds, all first
    for (let i = 0; i < 8; i++) await emit(api.platform.db, busy.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    await emit(api.platform.db, other.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    try {
      const claimed = await claimDueDeliveries(api.platform.db, 1, 60_000, {
        perEndpoint: 2,
        busy: new Map([[busyEndpoint, 2]]),
      });
      expect(claimed.map((pending) => pending.endpointId)).toEqual([otherEndpoint]);
    } finally {
      await api.platform.db.query('DELETE FROM webhook_events WHERE endpoint_id = ANY($1::uuid[])', [
        [busyEndpoint, otherEndpoint],
      ]);
    }
  });

  it('looks ahead 4 x the limit, giving each endpoint its own room within one claim', async () => {
    const [crowded, other] = [await createTestOrg(api.platform.db), await createTestOrg(api.platform.db)];
    const endpointFor = async (org: TestOrg, path: string) =>
      (
        await registerEndpoint(api, org.apiKey, {
          url: `http://127.0.0.1:9/${path}`,
          events: ['invoice.posted'],
        })
      ).id;
    const crowdedEndpoint = await endpointFor(crowded, 'crowded');
    const otherEndpoint = await endpointFor(other, 'other');
    // 7 events due at one endpoint, then 1 at another: the 8th in order, the last the window holds
    for (let i = 0; i < 7; i++) await emit(api.platform.db, crowded.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    await emit(api.platform.db, other.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    try {
      const claimed = await claimDueDeliveries(api.platform.db, 2, 60_000, {
        perEndpoint: 1,
        busy: new Map(),
      });
      expect(claimed.map((pending) => pending.endpointId).sort()).toEqual(
        [crowdedEndpoint, otherEndpoint].sort(),
      );
    } finally {
      await api.platform.db.query('DELETE FROM webhook_events WHERE endpoint_id = ANY($1::uuid[])', [
        [crowdedEndpoint, otherEndpoint],
      ]);
    }
  });

  it("claims an endpoint's due events oldest first when it has room for fewer than are due", async () => {
    const org = await createTestOrg(api.platform.db);
    const endpoint = (
      await registerEndpoint(api, org.apiKey, {
        url: 'http://127.0.0.1:9/ordered',
        events: ['invoice.posted'],
      })
    ).id;
    // one fan-out each: the three events fall due one after another
    for (let i = 0; i < 3; i++) {
      await emit(api.platform.db, org.orgId, 'invoice.posted', { id: `inv-${i}`, object: 'invoice' });
      await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    }
    try {
      const claimed = await claimDueDeliveries(api.platform.db, 1, 60_000, {
        perEndpoint: 1,
        busy: new Map(),
      });
      expect(claimed.map((pending) => JSON.parse(pending.payload).data.id)).toEqual(['inv-0']);
    } finally {
      await api.platform.db.query('DELETE FROM webhook_events WHERE endpoint_id = $1', [endpoint]);
    }
  });

  it("claims each endpoint's oldest due event first, however the due events of endpoints interleave", async () => {
    const org = await createTestOrg(api.platform.db);
    const endpoints = [];
    for (const path of ['first', 'second', 'third']) {
      endpoints.push(
        (
          await registerEndpoint(api, org.apiKey, {
            url: `http://127.0.0.1:9/${path}`,
            events: ['invoice.posted'],
          })
        ).id,
      );
    }
    // one fan-out per event: 30 events falling due one after another, taking turns between the endpoints
    for (let i = 0; i < 10; i++) {
      await emit(api.platform.db, org.orgId, 'invoice.posted', { id: `inv-${i}`, object: 'invoice' });
      await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    }
    try {
      // room for one each, and a look-ahead (4 x 10) that holds every due event
      const claimed = await claimDueDeliveries(api.platform.db, 10, 60_000, {
        perEndpoint: 1,
        busy: new Map(),
      });
      expect(claimed.map((pending) => JSON.parse(pending.payload).data.id)).toEqual([
        'inv-0',
        'inv-0',
        'inv-0',
      ]);
      expect(claimed.map((pending) => pending.endpointId).sort()).toEqual([...endpoints].sort());
    } finally {
      await api.platform.db.query('DELETE FROM webhook_events WHERE endpoint_id = ANY($1::uuid[])', [
        endpoints,
      ]);
    }
  });

  it("lets no endpoint hold every slot: one that hangs does not hold up another tenant's events", async () => {
    const [stuck, other] = [await createTestOrg(api.platform.db), await createTestOrg(api.platform.db)];
    const hanging = await startReceiver(() => ({ status: 200, delayMs: 5000 }));
    const healthy = await startReceiver();
    await endpointOf(stuck, hanging);
    await endpointOf(other, healthy);
    // Eight events due at the hanging endpoint before the other tenant's one.
    for (let i = 0; i < 8; i++) await emit(api.platform.db, stuck.orgId, 'invoice.posted');
    await emit(api.platform.db, other.orgId, 'invoice.posted');

    dispatcher = startDispatcher(api.platform.db, {
      concurrency: 4,
      endpointConcurrency: 2,
      timeoutMs: 3000,
    });
    // Within the hanging attempts' timeout: the other tenant's event went out in a free slot.
    await healthy.waitFor(1, 2000);
    await hanging.waitFor(2, 1000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(hanging.deliveries).toHaveLength(2);
  });
});
