import { verify as verifyServiceSignature } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { freeTcpPort } from '../helpers/redis-server.js';
import {
  attemptsOf,
  emit,
  eventually,
  type Receiver,
  registerEndpoint,
  sleep,
  standardVerifies,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

const MISSING_ID = '6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11';

/**
 * POST /webhook-endpoints/{id}/recover: after a receiver outage of any length, one call sends
 * every FAILED event again, each with a new series of attempts (same id and bytes, new
 * timestamps and signatures).
 */
describe('webhook recovery', () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    api = await startTestApi();
    dispatcher = startDispatcher(api.platform.db);
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await api?.close();
  });

  const createEndpoint = (org: TestOrg, url: string) =>
    registerEndpoint(api, org.apiKey, { url, events: ['invoice.*'] });

  function recover(org: TestOrg, endpointId: string, payload: unknown) {
    return api.request({
      method: 'POST',
      path: `/webhook-endpoints/${endpointId}/recover`,
      key: org.apiKey,
      payload: payload as Record<string, unknown>,
    });
  }

  /** An endpoint whose receiver is down (nothing listens on its port) until `receiverUp` starts it. */
  async function endpointDuringOutage(org: TestOrg) {
    const port = await freeTcpPort();
    const endpoint = await createEndpoint(org, `http://127.0.0.1:${port}/hooks`);
    return {
      endpoint,
      async receiverUp(): Promise<Receiver> {
        const receiver = await startReceiver(undefined, { port });
        receivers.push(receiver);
        return receiver;
      },
    };
  }

  async function failedEvents(endpointId: string, count: number) {
    return eventually(
      () => storedEvents(api.platform.db, endpointId),
      (rows) => rows.length === count && rows.every((row) => row.status === 'FAILED'),
    );
  }

  it('sends every FAILED event again after an outage, with the same id and bytes, answering 202 with the count', async () => {
    const org = await createTestOrg(api.platform.db);
    const { endpoint, receiverUp } = await endpointDuringOutage(org);
    const since = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 4; i++) await emit(api.platform.db, org.orgId, 'invoice.posted');
    const failed = await failedEvents(endpoint.id, 4);
    for (const event of failed) {
      expect(event).toMatchObject({ attempts: 5, last_response_code: 0 });
    }

    const receiver = await receiverUp();
    const response = await recover(org, endpoint.id, { since });
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toEqual({ data: { queued: 4 } });

    const delivered = await receiver.waitFor(4);
    const events = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows.every((row) => row.status === 'SUCCESS'),
    );
    const byId = new Map(events.map((event) => [event.id, event]));
    expect(new Set(delivered.map((d) => d.headers['webhook-id']))).toEqual(new Set(byId.keys()));
    // sent in the order the events happened
    expect(delivered.map((d) => d.headers['webhook-id'])).toEqual(failed.map((event) => event.id));
    for (const delivery of delivered) {
      const event = byId.get(delivery.headers['webhook-id'] as string)!;
      expect(delivery.body).toBe(event.payload);
      expect(delivery.headers['x-service-delivery']).toBe(event.id);
      expect(standardVerifies(endpoint.secret, delivery)).toBe(true);
      expect(
        await verifyServiceSignature(
          endpoint.secret,
          delivery.body,
          delivery.headers['x-service-signature'] as string,
        ),
      ).toBe(true);
      expect(event.attempts).toBe(6);
      const history = await attemptsOf(api.platform.db, event.id);
      expect(history.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(history.map((a) => a.response_code)).toEqual([0, 0, 0, 0, 0, 200]);
    }
    const [first] = events;
    const shown = (await api.request({ path: `/webhook-events/${first!.id}`, key: org.apiKey })).json().data;
    expect(shown).toMatchObject({
      status: 'SUCCESS',
      attempts: 6,
      max_attempts: 10,
      last_response_code: 200,
    });
    // the new attempt was stamped now, not when the event first failed
    const lastAttempt = shown.attempt_history.at(-1);
    const delivery = delivered.find((d) => d.headers['webhook-id'] === first!.id)!;
    expect(Number(delivery.headers['webhook-timestamp'])).toBe(Math.floor(Date.parse(lastAttempt.at) / 1000));
    expect(lastAttempt.signatures.webhook_signature).toHaveLength(1);

    // nothing FAILED is left: a second call queues nothing
    expect((await recover(org, endpoint.id, { since })).json()).toEqual({ data: { queued: 0 } });
    await sleep(300);
    expect(receiver.deliveries).toHaveLength(4);
  });

  it('gives a recovered event a whole new series of attempts, and queues it only once', async () => {
    const org = await createTestOrg(api.platform.db);
    const { endpoint } = await endpointDuringOutage(org);
    const since = new Date(Date.now() - 1000).toISOString();
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const [failed] = await failedEvents(endpoint.id, 1);

    // the receiver is still down: the first call queues it, a call while it is queued does not
    const [first, second] = [
      await recover(org, endpoint.id, { since }),
      await recover(org, endpoint.id, { since }),
    ];
    expect(first.json()).toEqual({ data: { queued: 1 } });
    expect(second.json()).toEqual({ data: { queued: 0 } });
    const [again] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'FAILED' && rows[0].attempts === 10,
    );
    expect(again!.id).toBe(failed!.id);
    expect((await attemptsOf(api.platform.db, failed!.id)).map((a) => a.attempt)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
    // FAILED again: recoverable again
    expect((await recover(org, endpoint.id, { since })).json()).toEqual({ data: { queued: 1 } });
  });

  it('queues concurrent calls once', async () => {
    const org = await createTestOrg(api.platform.db);
    const { endpoint } = await endpointDuringOutage(org);
    const since = new Date(Date.now() - 1000).toISOString();
    for (let i = 0; i < 3; i++) await emit(api.platform.db, org.orgId, 'invoice.paid');
    await failedEvents(endpoint.id, 3);
    const answers = await Promise.all(Array.from({ length: 4 }, () => recover(org, endpoint.id, { since })));
    expect(answers.map((a) => a.statusCode)).toEqual([202, 202, 202, 202]);
    expect(answers.map((a) => a.json().data.queued).sort()).toEqual([0, 0, 0, 3]);
  });

  it('leaves events created before `since`, other endpoints and other statuses alone', async () => {
    const org = await createTestOrg(api.platform.db);
    const { endpoint } = await endpointDuringOutage(org);
    const { endpoint: neighbour } = await endpointDuringOutage(org);
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const [old] = await failedEvents(endpoint.id, 1);
    await failedEvents(neighbour.id, 1);
    await sleep(20);
    const since = new Date().toISOString();
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const events = await failedEvents(endpoint.id, 2);
    const recent = events.find((event) => event.id !== old!.id)!;

    expect((await recover(org, endpoint.id, { since })).json()).toEqual({ data: { queued: 1 } });
    const { rows } = await api.platform.db.query<{
      id: string;
      status: string;
      max_attempts: number;
      series_first_attempt: number;
    }>(
      `SELECT id, status, max_attempts, series_first_attempt FROM webhook_events
        WHERE endpoint_id = ANY($1::uuid[])`,
      [[endpoint.id, neighbour.id]],
    );
    const state = new Map(rows.map((row) => [row.id, row]));
    expect(state.get(old!.id)).toMatchObject({ status: 'FAILED', max_attempts: 5, series_first_attempt: 1 });
    // the new series starts at attempt 6, so its delays start over from the first (docs/decisions.md,
    // "Recovery re-queues FAILED events as a new series")
    expect(state.get(recent.id)).toMatchObject({ max_attempts: 10, series_first_attempt: 6 });
    for (const row of rows.filter((r) => r.id !== recent.id)) expect(row.max_attempts).toBe(5);
  });

  it('includes an event created at exactly `since`', async () => {
    // openapi.json (recover, since): "every FAILED event of the endpoint created at or after this instant"
    const org = await createTestOrg(api.platform.db);
    const { endpoint } = await endpointDuringOutage(org);
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const [failed] = await failedEvents(endpoint.id, 1);
    const { rows } = await api.platform.db.query<{ created_at: Date }>(
      `UPDATE webhook_events SET created_at = date_trunc('milliseconds', created_at) WHERE id = $1
       RETURNING created_at`,
      [failed!.id],
    );
    const since = rows[0]!.created_at.toISOString();
    expect((await recover(org, endpoint.id, { since })).json()).toEqual({ data: { queued: 1 } });
  });

  it('answers 422 with details for a malformed, missing or future since, or another field', async () => {
    const org = await createTestOrg(api.platform.db);
    const endpoint = await createEndpoint(org, 'https://hooks.example.com/recover');
    const future = new Date(Date.now() + 3_600_000).toISOString();
    for (const [payload, field, code] of [
      [{ since: 'yesterday' }, 'since', undefined],
      [{ since: '2026-13-01T00:00:00Z' }, 'since', undefined],
      [{ since: '2026-01-01' }, 'since', undefined],
      [{ since: '2026-01-01T00:00:00' }, 'since', undefined],
      [{ since: 1_700_000_000 }, 'since', undefined],
      [{ since: future }, 'since', 'out_of_range'],
      [{ since: '0000-01-01T00:00:00Z' }, 'since', 'out_of_range'],
      [{}, 'since', 'required'],
      [{ since: '2026-01-01T00:00:00Z', limit: 5 }, 'limit', 'unknown_field'],
    ] as const) {
      const response = await recover(org, endpoint.id, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      expect(response.json().error_code).toBe('VALIDATION_ERROR');
      expect(response.json().details, JSON.stringify(payload)).toEqual([expect.objectContaining({ field })]);
      if (code) expect(response.json().details[0].code, JSON.stringify(payload)).toBe(code);
    }
    const noBody = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${endpoint.id}/recover`,
      key: org.apiKey,
    });
    expect(noBody.statusCode).toBe(422);
    // an offset is a time zone like any other; the oldest instant Postgres holds is fine
    for (const since of ['2026-01-01T02:00:00+02:00', '0001-01-01T00:00:00+14:00']) {
      expect((await recover(org, endpoint.id, { since })).json(), since).toEqual({ data: { queued: 0 } });
    }
  });

  it("answers 404 for an unknown, deleted or another organization's endpoint, 409 for a DISABLED one", async () => {
    const org = await createTestOrg(api.platform.db);
    const other = await createTestOrg(api.platform.db);
    const foreign = await createEndpoint(other, 'https://hooks.example.com/foreign');
    const deleted = await createEndpoint(org, 'https://hooks.example.com/deleted');
    await api.request({ method: 'DELETE', path: `/webhook-endpoints/${deleted.id}`, key: org.apiKey });
    const since = '2026-01-01T00:00:00Z';
    for (const id of [MISSING_ID, foreign.id, deleted.id, 'not-a-uuid']) {
      const response = await recover(org, id, { since });
      expect(response.statusCode, id).toBe(404);
      expect(response.json().error_code).toBe('NOT_FOUND');
    }
    const disabled = await createEndpoint(org, 'https://hooks.example.com/disabled');
    await api.request({
      method: 'PATCH',
      path: `/webhook-endpoints/${disabled.id}`,
      key: org.apiKey,
      payload: { status: 'DISABLED' },
    });
    const conflict = await recover(org, disabled.id, { since });
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json().error_code).toBe('CONFLICT');
  });
});
