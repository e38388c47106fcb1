import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimDueDeliveries, type PendingDelivery } from '../../libs/webhooks/delivery.js';
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

  /** An endpoint of `org` at a port nothing listens on: only a claim made by hand takes its events. */
  const unreachableEndpoint = async (org: TestOrg, path: string): Promise<string> =>
    (
      await registerEndpoint(api, org.apiKey, {
        url: `http://127.0.0.1:9/${path}`,
        events: ['invoice.posted'],
      })
    ).id;

  const fanOut = () => fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });

  /** One claim made by hand; the endpoints' events deleted after it, so no other claim takes them. */
  async function claimOnce(
    endpoints: readonly string[],
    limit: number,
    options: Parameters<typeof claimDueDeliveries>[3],
  ): Promise<PendingDelivery[]> {
    try {
      return await claimDueDeliveries(api.platform.db, limit, 60_000, options);
    } finally {
      await api.platform.db.query('DELETE FROM webhook_events WHERE endpoint_id = ANY($1::uuid[])', [
        endpoints,
      ]);
    }
  }

  it("does not let the backlog of an endpoint at its limit fill the claim's look-ahead", async () => {
    // no dispatcher yet: the claim is made by hand, with the busy endpoint's attempts given
    const [busy, other] = [await createTestOrg(api.platform.db), await createTestOrg(api.platform.db)];
    const busyEndpoint = await unreachableEndpoint(busy, 'busy');
    const otherEndpoint = await unreachableEndpoint(other, 'other');
    // more due events at the busy endpoint than the look-ahead (4 x the claim limit) holds, all first
    for (let i = 0; i < 8; i++) await emit(api.platform.db, busy.orgId, 'invoice.posted');
    await fanOut();
    await emit(api.platform.db, other.orgId, 'invoice.posted');
    await fanOut();
    const claimed = await claimOnce([busyEndpoint, otherEndpoint], 1, {
      perEndpoint: 2,
      busy: new Map([[busyEndpoint, 2]]),
    });
    expect(claimed.map((pending) => pending.endpointId)).toEqual([otherEndpoint]);
  });

  it('looks ahead 4 x the limit, giving each endpoint its own room within one claim', async () => {
    const [crowded, other] = [await createTestOrg(api.platform.db), await createTestOrg(api.platform.db)];
    const crowdedEndpoint = await unreachableEndpoint(crowded, 'crowded');
    const otherEndpoint = await unreachableEndpoint(other, 'other');
    // 7 events due at one endpoint, then 1 at another: the 8th in order, the last the window holds
    for (let i = 0; i < 7; i++) await emit(api.platform.db, crowded.orgId, 'invoice.posted');
    await fanOut();
    await emit(api.platform.db, other.orgId, 'invoice.posted');
    await fanOut();
    const claimed = await claimOnce([crowdedEndpoint, otherEndpoint], 2, { perEndpoint: 1, busy: new Map() });
    expect(claimed.map((pending) => pending.endpointId).sort()).toEqual(
      [crowdedEndpoint, otherEndpoint].sort(),
    );
  });

  /** `count` events, one fan-out each, so each falls due after the one before; ids inv-0, inv-1... */
  async function dueOneAfterAnother(org: TestOrg, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      await emit(api.platform.db, org.orgId, 'invoice.posted', { id: `inv-${i}`, object: 'invoice' });
      await fanOut();
    }
  }

  it("claims an endpoint's due events oldest first when it has room for fewer than are due", async () => {
    const org = await createTestOrg(api.platform.db);
    const endpoint = await unreachableEndpoint(org, 'ordered');
    await dueOneAfterAnother(org, 3);
    const claimed = await claimOnce([endpoint], 1, { perEndpoint: 1, busy: new Map() });
    expect(claimed.map((pending) => JSON.parse(pending.payload).data.id)).toEqual(['inv-0']);
  });

  it("claims each endpoint's oldest due event first, however the due events of endpoints interleave", async () => {
    const org = await createTestOrg(api.platform.db);
    const endpoints: string[] = [];
    for (const path of ['first', 'second', 'third']) endpoints.push(await unreachableEndpoint(org, path));
    // 30 events falling due one after another, taking turns between the endpoints
    await dueOneAfterAnother(org, 10);
    // room for one each, and a look-ahead (4 x 10) that holds every due event
    const claimed = await claimOnce(endpoints, 10, { perEndpoint: 1, busy: new Map() });
    expect(claimed.map((pending) => JSON.parse(pending.payload).data.id)).toEqual([
      'inv-0',
      'inv-0',
      'inv-0',
    ]);
    expect(claimed.map((pending) => pending.endpointId).sort()).toEqual([...endpoints].sort());
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
