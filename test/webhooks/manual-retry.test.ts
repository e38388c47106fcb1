import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { emit, eventually, type Receiver, startDispatcher, startReceiver, storedEvents } from './support.js';

/**
 * The spec: a manual retry "makes one immediate attempt". The dispatcher here polls only every
 * 30 s, so an attempt that comes within a few seconds of the retry shows the retry woke it.
 */
describe('manual retry against an idle dispatcher', () => {
  const POLL_MS = 30_000;
  let api: TestApi;
  let org: TestOrg;
  let receiver: Receiver;
  let dispatcher: WebhookDispatcher | undefined;

  beforeAll(async () => {
    api = await startTestApi();
    org = await createTestOrg(api.platform.db);
    receiver = await startReceiver((_delivery, count) => (count === 1 ? { status: 500 } : { status: 200 }));
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
    await api?.close();
  });

  it('makes the attempt at once, not at the next poll', async () => {
    const created = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: org.apiKey,
      payload: { url: receiver.url, events: ['invoice.paid'] },
    });
    expect(created.statusCode).toBe(201);
    const endpointId = created.json().data.id;
    // Emitted before the dispatcher starts: its first turn fans the outbox out without a NOTIFY.
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    dispatcher = startDispatcher(api.platform.db, { pollMs: POLL_MS, maxAttempts: 1 });
    const [failed] = await eventually(
      () => storedEvents(api.platform.db, endpointId),
      (rows) => rows[0]?.status === 'FAILED',
    );

    const retried = await api.request({
      method: 'POST',
      path: `/webhook-events/${failed!.id}/retry`,
      key: org.apiKey,
    });
    expect(retried.statusCode).toBe(202);
    const retriedAt = Date.now();
    const deliveries = await receiver.waitFor(2, 5000);
    expect(deliveries[1]!.receivedAt - retriedAt).toBeLessThan(3000);
    await eventually(
      () => storedEvents(api.platform.db, endpointId),
      (rows) => rows[0]?.status === 'SUCCESS' && rows[0].attempts === 2,
    );
  });
});
