import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emitDomainEvent } from '../../libs/events/index.js';
import type { WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';
import { freeTcpPort } from '../helpers/redis-server.js';
import {
  emit,
  eventually,
  type Receiver,
  registerEndpoint,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

/**
 * Events sent again go out in the order they happened, one after another: recovering five
 * events created in one transaction (the same created_at) delivers them first to last, and an
 * event that fails again holds the ones after it back until it is delivered. The plausible bugs:
 * ordering by created_at and a random id (events created together come out shuffled), and
 * sending a recovered series concurrently (the endpoint's slots let later events overtake).
 */
describe('events sent again', () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    api = await startTestApi();
    // several slots per endpoint, as in production: order must not come from a single slot
    dispatcher = startDispatcher(api.platform.db, { concurrency: 10, endpointConcurrency: 10 });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await api?.close();
  });

  it('are recovered in order of occurrence, each after the one before it was delivered', async () => {
    const org = await createTestOrg(api.platform.db);
    const port = await freeTcpPort();
    const endpoint = await registerEndpoint(api, org.apiKey, {
      url: `http://127.0.0.1:${port}/hooks`,
      events: ['invoice.*'],
    });
    const since = new Date(Date.now() - 1000).toISOString();
    // five changes committed together: one created_at, their order only in the outbox
    await api.platform.db.transaction(async (tx) => {
      for (let i = 1; i <= 5; i++) {
        await emitDomainEvent(tx, { orgId: org.orgId, type: 'invoice.posted', data: { id: `change-${i}` } });
      }
    });
    await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows.length === 5 && rows.every((row) => row.status === 'FAILED'),
    );

    // back up, slow, and refusing the very first request: without order, the others overtake it
    let inFlight = 0;
    let overlapped = false;
    const receiver = await startReceiver(
      (_delivery, count) => {
        if (++inFlight > 1) overlapped = true;
        setTimeout(() => inFlight--, 40);
        return count === 1 ? { status: 500, delayMs: 40 } : { status: 200, delayMs: 40 };
      },
      { port },
    );
    receivers.push(receiver);
    const response = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${endpoint.id}/recover`,
      key: org.apiKey,
      payload: { since },
    });
    expect(response.json()).toEqual({ data: { queued: 5 } });

    const delivered = await receiver.waitFor(6, 15_000);
    const changes = delivered.map(
      (delivery) => (JSON.parse(delivery.body) as { data: { id: string } }).data.id,
    );
    expect(changes).toEqual(['change-1', 'change-1', 'change-2', 'change-3', 'change-4', 'change-5']);
    expect(overlapped).toBe(false);
    await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows.every((row) => row.status === 'SUCCESS'),
    );
  });
  it('are retried by hand in order of occurrence too: a retry waits for the earlier one retried before it', async () => {
    const org = await createTestOrg(api.platform.db);
    const port = await freeTcpPort();
    const endpoint = await registerEndpoint(api, org.apiKey, {
      url: `http://127.0.0.1:${port}/hooks`,
      events: ['invoice.*'],
    });
    await api.platform.db.transaction(async (tx) => {
      for (let i = 1; i <= 3; i++) {
        await emitDomainEvent(tx, { orgId: org.orgId, type: 'invoice.posted', data: { id: `retried-${i}` } });
      }
    });
    const failed = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows.length === 3 && rows.every((row) => row.status === 'FAILED'),
    );

    let inFlight = 0;
    let overlapped = false;
    const receiver = await startReceiver(
      () => {
        if (++inFlight > 1) overlapped = true;
        setTimeout(() => inFlight--, 150);
        return { status: 200, delayMs: 150 };
      },
      { port },
    );
    receivers.push(receiver);
    // retried one after the other, faster than the receiver answers: the slots would let them overlap
    for (const event of failed) {
      const response = await api.request({
        method: 'POST',
        path: `/webhook-events/${event.id}/retry`,
        key: org.apiKey,
      });
      expect(response.statusCode).toBe(202);
    }
    const delivered = await receiver.waitFor(3, 15_000);
    expect(
      delivered.map((delivery) => (JSON.parse(delivery.body) as { data: { id: string } }).data.id),
    ).toEqual(['retried-1', 'retried-2', 'retried-3']);
    expect(overlapped).toBe(false);
  });

  it('wait only for earlier events sent again to their own endpoint and still under way', async () => {
    // every attempt fails and its automatic retry is an hour away: only a retry by hand sends again
    await dispatcher.stop();
    dispatcher = startDispatcher(api.platform.db, { maxAttempts: 3, retryDelaysMs: [3_600_000] });
    const org = await createTestOrg(api.platform.db);
    const receiver = await startReceiver(() => ({ status: 500 }));
    receivers.push(receiver);
    const elsewhere = await registerEndpoint(api, org.apiKey, {
      url: `${receiver.url}?to=elsewhere`,
      events: ['invoice.paid'],
    });
    const endpoint = await registerEndpoint(api, org.apiKey, {
      url: receiver.url,
      events: ['invoice.posted'],
    });
    await emit(api.platform.db, org.orgId, 'invoice.paid', { id: 'elsewhere' });
    for (let i = 1; i <= 3; i++) await emit(api.platform.db, org.orgId, 'invoice.posted', { id: `own-${i}` });
    const [other] = await eventually(
      () => storedEvents(api.platform.db, elsewhere.id),
      (rows) => rows[0]?.status === 'RETRYING',
    );
    const [first, second, third] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows.length === 3 && rows.every((row) => row.status === 'RETRYING'),
    );
    /** Retries the event by hand and waits for the attempt it makes: `attempts` in all, then `status`. */
    const retried = async (eventId: string, endpointId: string, attempts: number, status: string) => {
      const response = await api.request({
        method: 'POST',
        path: `/webhook-events/${eventId}/retry`,
        key: org.apiKey,
      });
      expect(response.statusCode).toBe(202);
      await eventually(
        async () => (await storedEvents(api.platform.db, endpointId)).find((row) => row.id === eventId),
        (row) => row?.attempts === attempts && row.status === status,
        5000,
      );
    };

    // sent again and still RETRYING: the first event sent again, at another endpoint
    await retried(other!.id, elsewhere.id, 2, 'RETRYING');
    // neither it nor an earlier event of the endpoint that only waits for its automatic retry holds it back
    await retried(second!.id, endpoint.id, 2, 'RETRYING');
    await retried(second!.id, endpoint.id, 3, 'FAILED');
    // an earlier event sent again that ended FAILED holds nothing back either
    await retried(third!.id, endpoint.id, 2, 'RETRYING');
    expect((await storedEvents(api.platform.db, endpoint.id)).map((row) => [row.id, row.attempts])).toEqual([
      [first!.id, 1],
      [second!.id, 3],
      [third!.id, 2],
    ]);
  });
});
