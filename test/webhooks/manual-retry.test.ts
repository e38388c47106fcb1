import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DispatcherSettings, WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import {
  emit,
  eventually,
  type Receiver,
  type Responder,
  registerEndpoint,
  sleep,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

/**
 * The spec: a manual retry "makes one immediate attempt". The dispatcher here polls only every
 * 30 s, so an attempt that comes within a few seconds of the retry shows the retry woke it; the
 * same holds for what else has to wake it: a recovery, an outbox left fuller than one batch, a
 * retry whose delay ended.
 */
describe('manual retry against an idle dispatcher', () => {
  const POLL_MS = 30_000;
  let api: TestApi;
  let org: TestOrg;
  let receiver: Receiver;
  let dispatcher: WebhookDispatcher | undefined;
  const targets: Receiver[] = [];

  beforeAll(async () => {
    api = await startTestApi();
    org = await createTestOrg(api.platform.db);
    receiver = await startReceiver((_delivery, count) => (count === 1 ? { status: 500 } : { status: 200 }));
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
    await Promise.all(targets.map((target) => target.close()));
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

  /** A receiver and an endpoint of a new organization, so no other test's events reach them. */
  async function ownEndpoint(
    responder?: Responder,
  ): Promise<{ owner: TestOrg; target: Receiver; id: string }> {
    const owner = await createTestOrg(api.platform.db);
    const target = await startReceiver(responder);
    targets.push(target);
    const { id } = await registerEndpoint(api, owner.apiKey, { url: target.url, events: ['invoice.*'] });
    return { owner, target, id };
  }

  /** The only dispatcher running: any earlier one is stopped, so none but this one delivers. */
  async function idleDispatcher(settings: Partial<DispatcherSettings> = {}): Promise<void> {
    await dispatcher?.stop();
    dispatcher = startDispatcher(api.platform.db, { pollMs: POLL_MS, ...settings });
    // its first turn finds nothing to do, LISTENs, and goes to sleep for the poll interval
    await sleep(500);
  }

  it('drains an outbox holding more than one batch without waiting for the poll', async () => {
    await dispatcher?.stop();
    const { owner, target, id } = await ownEndpoint();
    // committed while no dispatcher runs: no NOTIFY is pending for the batches after the first
    for (let i = 0; i < 5; i++) await emit(api.platform.db, owner.orgId, 'invoice.paid');
    const startedAt = Date.now();
    dispatcher = startDispatcher(api.platform.db, { pollMs: POLL_MS, outboxBatchSize: 2 });
    const deliveries = await target.waitFor(5, 5000);
    expect(deliveries.at(-1)!.receivedAt - startedAt).toBeLessThan(3000);
    // each delivered once, and recorded (the last one's record may follow its arrival)
    await eventually(
      () => storedEvents(api.platform.db, id),
      (rows) => rows.length === 5 && rows.every((row) => row.status === 'SUCCESS' && row.attempts === 1),
    );
    expect(target.deliveries).toHaveLength(5);
  });

  it('makes an automatic retry when its delay ends, not at the next poll', async () => {
    const { owner, target } = await ownEndpoint((_delivery, count) => ({ status: count === 1 ? 503 : 200 }));
    await idleDispatcher({ retryDelaysMs: [200] });
    await emit(api.platform.db, owner.orgId, 'invoice.paid');
    const [first, second] = await target.waitFor(2, 5000);
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(190);
    expect(second!.receivedAt - first!.receivedAt).toBeLessThan(3000);
  });

  it('sends recovered events at once, not at the next poll', async () => {
    const { owner, target, id } = await ownEndpoint((_delivery, count) => ({
      status: count === 1 ? 500 : 200,
    }));
    const since = new Date(Date.now() - 1000).toISOString();
    await idleDispatcher({ maxAttempts: 1 });
    await emit(api.platform.db, owner.orgId, 'invoice.paid');
    await eventually(
      () => storedEvents(api.platform.db, id),
      (rows) => rows[0]?.status === 'FAILED',
    );
    const recovered = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${id}/recover`,
      key: owner.apiKey,
      payload: { since },
    });
    expect(recovered.json()).toEqual({ data: { queued: 1 } });
    const recoveredAt = Date.now();
    const deliveries = await target.waitFor(2, 5000);
    expect(deliveries[1]!.receivedAt - recoveredAt).toBeLessThan(3000);
  });
});
