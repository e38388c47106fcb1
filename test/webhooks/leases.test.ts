import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptRecorder } from '../../libs/webhooks/attempt-recorder.js';
import {
  attempt,
  claimDueDeliveries,
  judge,
  type PendingDelivery,
  recordAttempts,
  recordUndeliverable,
} from '../../libs/webhooks/delivery.js';
import { fanOutOutbox } from '../../libs/webhooks/index.js';
import { WebhookSender } from '../../libs/webhooks/webhook-sender.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { emit, type Receiver, registerEndpoint, sleep, startReceiver, storedEvents } from './support.js';

/*
 * The lease a claim sets (next_attempt_at) is the token every recording checks: a dispatcher whose
 * lease lapsed and was taken over by another records nothing, so one attempt is counted once.
 */
describe('webhook delivery leases', () => {
  let api: TestApi;
  let receiver: Receiver;
  let org: TestOrg;
  let endpointId: string;
  const sender = new WebhookSender({ timeoutMs: 2000, allowLocalhost: true });
  const NO_BUSY = { perEndpoint: 10, busy: new Map<string, number>() };

  beforeAll(async () => {
    api = await startTestApi();
    receiver = await startReceiver();
    org = await createTestOrg(api.platform.db);
    endpointId = await endpointOf(org, receiver.url);
  });
  afterAll(async () => {
    await receiver?.close();
    await api?.close();
  });

  async function endpointOf(owner: TestOrg, url: string): Promise<string> {
    return (await registerEndpoint(api, owner.apiKey, { url, events: ['invoice.posted'] })).id;
  }

  /** One new due event of the org, claimed twice: first with a lease that lapses at once. */
  async function claimedTwice(owner = org): Promise<{ lapsed: PendingDelivery; current: PendingDelivery }> {
    await emit(api.platform.db, owner.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    const [lapsed] = await claimDueDeliveries(api.platform.db, 10, 1, NO_BUSY);
    await sleep(20);
    const [current] = await claimDueDeliveries(api.platform.db, 10, 60_000, NO_BUSY);
    expect(lapsed?.eventId).toBeDefined();
    expect(current?.eventId).toBe(lapsed?.eventId);
    expect(current?.attempt).toBe(1);
    expect(current?.lease).not.toBe(lapsed?.lease);
    return { lapsed: lapsed as PendingDelivery, current: current as PendingDelivery };
  }

  async function stored(eventId: string, endpoint = endpointId) {
    const event = (await storedEvents(api.platform.db, endpoint)).find((row) => row.id === eventId);
    const { rows } = await api.platform.db.query<{ attempt: number }>(
      'SELECT attempt FROM webhook_attempts WHERE webhook_event_id = $1 ORDER BY attempt',
      [eventId],
    );
    return { status: event?.status, attempts: event?.attempts, attemptRows: rows.map((row) => row.attempt) };
  }

  it('records nothing of an attempt whose lease was taken over, and the holder records once', async () => {
    const { lapsed, current } = await claimedTwice();
    const late = judge(await attempt(lapsed, sender, new Date()), [50]);
    expect(late.kind).toBe('succeeded');

    expect([...(await recordAttempts(api.platform.db, [late]))]).toEqual([]);
    expect(await stored(lapsed.eventId)).toEqual({ status: 'PENDING', attempts: 0, attemptRows: [] });

    const held = judge(await attempt(current, sender, new Date()), [50]);
    expect([...(await recordAttempts(api.platform.db, [held]))]).toEqual([current.eventId]);
    expect(await stored(current.eventId)).toEqual({ status: 'SUCCESS', attempts: 1, attemptRows: [1] });

    // the same finished attempt recorded again (a retried statement) adds nothing
    expect([...(await recordAttempts(api.platform.db, [held]))]).toEqual([]);
    expect(await stored(current.eventId)).toEqual({ status: 'SUCCESS', attempts: 1, attemptRows: [1] });
  });

  it('records the holders of a batch and skips only the lapsed one in it', async () => {
    const first = await claimedTwice();
    const second = await claimedTwice();
    const finished = await Promise.all(
      [first.lapsed, second.current].map(async (pending) =>
        judge(await attempt(pending, sender, new Date()), [50]),
      ),
    );
    expect([...(await recordAttempts(api.platform.db, finished))]).toEqual([second.current.eventId]);
    expect((await stored(first.current.eventId)).attemptRows).toEqual([]);
    expect((await stored(second.current.eventId)).attemptRows).toEqual([1]);
  });

  it('records a batch once it holds maxBatch attempts, telling each caller about its own', async () => {
    const first = await claimedTwice();
    const second = await claimedTwice();
    const finished = await Promise.all(
      [first.lapsed, second.current].map(async (pending) =>
        judge(await attempt(pending, sender, new Date()), [50]),
      ),
    );
    // a delay of an hour: only reaching maxBatch writes the batch within the test
    const recorder = new AttemptRecorder(api.platform.db, 2, 3_600_000);
    expect(await Promise.all(finished.map((delivery) => recorder.record(delivery)))).toEqual([false, true]);
    expect((await stored(second.current.eventId)).attemptRows).toEqual([1]);
  });

  it('ends a RETRYING event as soon as its endpoint is disabled, not at its next due time', async () => {
    const owner = await createTestOrg(api.platform.db);
    const endpoint = await endpointOf(owner, 'http://127.0.0.1:9/refused');
    await emit(api.platform.db, owner.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
    const claimed = await claimDueDeliveries(api.platform.db, 10, 60_000, NO_BUSY);
    const [pending] = claimed.filter((delivery) => delivery.endpointId === endpoint);
    // the connection is refused: the next attempt would be an hour away
    const failed = judge(await attempt(pending!, sender, new Date()), [3_600_000]);
    expect(failed).toMatchObject({ kind: 'failed', next: { status: 'RETRYING', delayMs: 3_600_000 } });
    expect([...(await recordAttempts(api.platform.db, [failed]))]).toEqual([pending!.eventId]);
    const disabled = await api.request({
      method: 'PATCH',
      path: `/webhook-endpoints/${endpoint}`,
      key: owner.apiKey,
      payload: { status: 'DISABLED' },
    });
    expect(disabled.statusCode, disabled.body).toBe(200);
    expect(await storedEvents(api.platform.db, endpoint)).toMatchObject([
      {
        id: pending!.eventId,
        status: 'FAILED',
        attempts: 1,
        last_response_body: 'Not delivered: the endpoint was disabled.',
      },
    ]);
  });

  it('claims a recovered event with the first attempt of its new series, so its delays start over', async () => {
    const owner = await createTestOrg(api.platform.db);
    const endpoint = await endpointOf(owner, 'http://127.0.0.1:9/recovered');
    const since = new Date(Date.now() - 60_000).toISOString();
    await emit(api.platform.db, owner.orgId, 'invoice.posted');
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 1 });
    const claimOne = async () =>
      (await claimDueDeliveries(api.platform.db, 10, 60_000, NO_BUSY)).filter(
        (delivery) => delivery.endpointId === endpoint,
      );
    const [first] = await claimOne();
    const ended = judge(await attempt(first!, sender, new Date()), [50]);
    expect(ended).toMatchObject({ kind: 'failed', next: { status: 'FAILED' } });
    await recordAttempts(api.platform.db, [ended]);
    const recovered = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${endpoint}/recover`,
      key: owner.apiKey,
      payload: { since },
    });
    expect(recovered.statusCode, recovered.body).toBe(202);
    const [again] = await claimOne();
    expect(again).toMatchObject({ attempt: 2, seriesFirstAttempt: 2 });
    const retried = judge(await attempt(again!, sender, new Date()), [1000, 2000]);
    expect(retried).toMatchObject({ kind: 'failed', next: { status: 'RETRYING', delayMs: 1000 } });
  });

  it('does not end as undeliverable an event whose lease was taken over', async () => {
    const { lapsed, current } = await claimedTwice();
    const reason = 'Not delivered: the endpoint was disabled.';
    expect(
      await recordUndeliverable(api.platform.db, { kind: 'undeliverable', pending: lapsed, reason }),
    ).toBe(false);
    expect((await stored(lapsed.eventId)).status).toBe('PENDING');

    expect(
      await recordUndeliverable(api.platform.db, { kind: 'undeliverable', pending: current, reason }),
    ).toBe(true);
    const event = (await storedEvents(api.platform.db, endpointId)).find((row) => row.id === current.eventId);
    expect(event).toMatchObject({ status: 'FAILED', attempts: 0, last_response_body: reason });
    // once ended, the holder's lease no longer ends it again
    expect(
      await recordUndeliverable(api.platform.db, { kind: 'undeliverable', pending: current, reason }),
    ).toBe(false);
  });

  it('counts one attempt of an event ended while two holders were in flight, the first recorded', async () => {
    const other = await createTestOrg(api.platform.db);
    const answers = await startReceiver((_, count) => ({ status: count === 1 ? 503 : 200 }));
    try {
      const endpoint = await endpointOf(other, answers.url);
      const { lapsed, current } = await claimedTwice(other);
      const first = judge(await attempt(lapsed, sender, new Date()), [50]);
      const second = judge(await attempt(current, sender, new Date()), [50]);
      expect(first.kind).toBe('failed');
      expect(second.kind).toBe('succeeded');
      // the endpoint is deleted while both attempts are in flight: the event ends FAILED unsent
      const deleted = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${endpoint}`,
        key: other.apiKey,
      });
      expect(deleted.statusCode, deleted.body).toBe(204);

      expect([...(await recordAttempts(api.platform.db, [first]))]).toEqual([lapsed.eventId]);
      expect([...(await recordAttempts(api.platform.db, [second]))]).toEqual([]);
      const event = (await storedEvents(api.platform.db, endpoint)).find((row) => row.id === lapsed.eventId);
      expect(event).toMatchObject({
        status: 'FAILED',
        attempts: 1,
        last_response_code: 503,
        last_response_body: 'Not delivered: the endpoint was deleted.',
      });
      expect((await stored(lapsed.eventId, endpoint)).attemptRows).toEqual([1]);
      // its failed attempt schedules no retry: the ended event is due never again
      const { rows } = await api.platform.db.query<{ next_attempt_at: Date | null }>(
        'SELECT next_attempt_at FROM webhook_events WHERE id = $1',
        [lapsed.eventId],
      );
      expect(rows).toEqual([{ next_attempt_at: null }]);
    } finally {
      await answers.close();
    }
  });
});
