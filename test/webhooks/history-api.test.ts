import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fanOutOutbox, type WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';
import { emit, eventually, type Receiver, startDispatcher, startReceiver, storedEvents } from './support.js';

const MISSING_ID = '0d5c7a7e-8a4f-4bd8-9d0b-2c4b1e6f9a33';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Delivery history and manual retry. Events are fanned out without a dispatcher first (so they
 * stay PENDING), then a dispatcher that makes one attempt per event finishes them.
 */
describe('webhook delivery history API', () => {
  let api: TestApi;
  let org: TestOrg;
  let other: TestOrg;
  let receiver: Receiver;
  let otherReceiver: Receiver;
  let dispatcher: WebhookDispatcher | undefined;
  let endpointA: string;
  let endpointB: string;
  let foreignEvent: string;
  let eventOfA: string;
  let succeedB = false;

  beforeAll(async () => {
    api = await startTestApi();
    org = await createTestOrg(api.platform.db);
    other = await createTestOrg(api.platform.db);
    // endpoint A succeeds; endpoint B fails until told otherwise
    receiver = await startReceiver((delivery) =>
      delivery.url.includes('to=b') && !succeedB ? { status: 500, body: 'b is down' } : { status: 204 },
    );
    otherReceiver = await startReceiver();
    endpointA = await createEndpoint(org.apiKey, `${receiver.url}?to=a`, ['invoice.*']);
    endpointB = await createEndpoint(org.apiKey, `${receiver.url}?to=b`, ['invoice.paid', 'subscription.*']);
    const foreignEndpoint = await createEndpoint(other.apiKey, otherReceiver.url, ['invoice.*']);

    await emit(api.platform.db, org.orgId, 'invoice.paid', { id: 'inv-1', object: 'invoice' });
    await emit(api.platform.db, org.orgId, 'invoice.posted', { id: 'inv-2', object: 'invoice' });
    await emit(api.platform.db, org.orgId, 'subscription.created', { id: 3, object: 'subscription' });
    await emit(api.platform.db, other.orgId, 'invoice.paid', { id: 'inv-x', object: 'invoice' });
    await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 1 });
    foreignEvent = (await storedEvents(api.platform.db, foreignEndpoint))[0]!.id;
    eventOfA = (await storedEvents(api.platform.db, endpointA))[0]!.id;
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await receiver?.close();
    await otherReceiver?.close();
    await api?.close();
  });

  async function createEndpoint(key: string, url: string, events: string[]): Promise<string> {
    const response = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key,
      payload: { url, events },
    });
    expect(response.statusCode).toBe(201);
    return response.json().data.id;
  }

  const list = (query = '', key = org.apiKey) => api.request({ path: `/webhook-events${query}`, key });
  const retry = (id: string, key = org.apiKey) =>
    api.request({ method: 'POST', path: `/webhook-events/${id}/retry`, key });

  it('lists PENDING events before any attempt, and refuses to retry them (409)', async () => {
    const response = await list();
    expect(response.statusCode).toBe(200);
    const { data, pagination } = response.json();
    // A: invoice.paid + invoice.posted; B: invoice.paid + subscription.created
    expect(pagination).toEqual({ limit: 25, offset: 0, total: 4, has_more: false });
    expect(data.every((event: { status: string }) => event.status === 'PENDING')).toBe(true);
    expect(data[0]).toEqual({
      id: expect.stringMatching(UUID),
      object: 'webhook_event',
      endpoint_id: expect.stringMatching(UUID),
      event_type: expect.any(String),
      status: 'PENDING',
      payload: {
        id: data[0].id,
        type: data[0].event_type,
        created: expect.any(Number),
        data: expect.any(Object),
      },
      attempts: 0,
      max_attempts: 1,
      next_attempt_at: expect.any(String),
      last_attempt_at: null,
      last_response_code: null,
      last_response_body: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    // one without attempts shows an empty history, not an attempt made of the join's empty row
    const shown = await api.request({ path: `/webhook-events/${eventOfA}`, key: org.apiKey });
    expect(shown.statusCode, shown.body).toBe(200);
    expect(shown.json().data).toMatchObject({ id: eventOfA, status: 'PENDING', attempt_history: [] });
    const conflict = await retry(eventOfA);
    expect(conflict.statusCode).toBe(409);
    expect(conflict.json()).toMatchObject({
      error_code: 'CONFLICT',
      detail: expect.stringContaining('pending'),
    });
  });

  it('finishes them: A SUCCESS, B FAILED after its only attempt', async () => {
    dispatcher = startDispatcher(api.platform.db, { maxAttempts: 1 });
    await eventually(
      () => list('?status=PENDING'),
      (response) => response.json().pagination.total === 0 && (dispatcher?.activeAttempts ?? 1) === 0,
    );
    const a = (await list(`?endpoint_id=${endpointA}`)).json();
    expect(a.data.map((e: { status: string }) => e.status)).toEqual(['SUCCESS', 'SUCCESS']);
    const b = (await list(`?endpoint_id=${endpointB}`)).json();
    expect(b.data).toEqual([
      expect.objectContaining({
        status: 'FAILED',
        attempts: 1,
        last_response_code: 500,
        last_response_body: 'b is down',
        next_attempt_at: null,
      }),
      expect.objectContaining({ status: 'FAILED', attempts: 1 }),
    ]);
  });

  it('filters by endpoint, status and event type, composed with pagination', async () => {
    const byType = (await list('?event_type=invoice.paid')).json();
    expect(byType.pagination.total).toBe(2);
    expect(new Set(byType.data.map((e: { endpoint_id: string }) => e.endpoint_id))).toEqual(
      new Set([endpointA, endpointB]),
    );
    const failedPaid = (await list(`?status=FAILED&event_type=invoice.paid&endpoint_id=${endpointB}`)).json();
    expect(failedPaid.data).toHaveLength(1);
    expect(failedPaid.data[0]).toMatchObject({
      endpoint_id: endpointB,
      event_type: 'invoice.paid',
      status: 'FAILED',
    });
    const success = (await list('?status=SUCCESS&limit=1&offset=1')).json();
    expect(success.data).toHaveLength(1);
    const bothSuccess = (await list('?status=SUCCESS')).json().data as { id: string }[];
    expect(bothSuccess).toHaveLength(2);
    expect(success.data[0].id).toBe(bothSuccess[1]!.id);
    expect(success.pagination).toEqual({ limit: 1, offset: 1, total: 2, has_more: false });
    const first = (await list('?limit=1')).json();
    expect(first.pagination).toEqual({ limit: 1, offset: 0, total: 4, has_more: true });
    expect((await list('?event_type=order.created')).json().pagination.total).toBe(0);

    const all = (await list()).json().data as { created_at: string; id: string }[];
    const sorted = [...all].sort((x, y) =>
      x.created_at === y.created_at ? y.id.localeCompare(x.id) : y.created_at.localeCompare(x.created_at),
    );
    expect(all).toEqual(sorted);
  });

  it('rejects bad filters and pagination with 422 naming the parameter', async () => {
    for (const [query, field] of [
      ['?endpoint_id=42', 'endpoint_id'],
      ['?status=DELIVERED', 'status'],
      ['?status=success', 'status'],
      ['?limit=0', 'limit'],
      ['?limit=101', 'limit'],
      ['?offset=-5', 'offset'],
      [`?event_type=${'x'.repeat(101)}`, 'event_type'],
      ['?event_type=x%00y', 'event_type'],
    ] as const) {
      const response = await list(query);
      expect(response.statusCode, query).toBe(422);
      expect(response.json().details.map((d: { field: string }) => d.field)).toContain(field);
    }
  });

  it('retrieves one event with its attempt history', async () => {
    const [failed] = (await list(`?endpoint_id=${endpointB}&event_type=invoice.paid`)).json().data;
    const response = await api.request({ path: `/webhook-events/${failed.id}`, key: org.apiKey });
    expect(response.statusCode).toBe(200);
    const { data } = response.json();
    expect(data).toMatchObject({ ...failed, updated_at: expect.any(String) });
    const keyId = (await api.request({ path: `/webhook-endpoints/${endpointB}`, key: org.apiKey })).json()
      .data.secret_key_id;
    expect(data.attempt_history).toEqual([
      {
        attempt: 1,
        at: expect.any(String),
        response_code: 500,
        duration_ms: expect.any(Number),
        signatures: { x_service_signature: keyId, webhook_signature: [keyId] },
      },
    ]);
    expect(data.attempt_history[0].at).toBe(data.last_attempt_at);
    const [delivered] = receiver.deliveries.filter((d) => d.headers['x-service-delivery'] === failed.id);
    expect(JSON.parse(delivered!.body)).toEqual(data.payload);
  });

  it('retries a FAILED event: 202, RETRYING and due now, then one more attempt', async () => {
    const [failed] = (await list(`?endpoint_id=${endpointB}&event_type=invoice.paid`)).json().data;
    succeedB = true;
    const before = Date.now();
    const response = await retry(failed.id);
    expect(response.statusCode).toBe(202);
    const { data } = response.json();
    expect(data).toMatchObject({ id: failed.id, status: 'RETRYING', attempts: 1, max_attempts: 2 });
    expect(Math.abs(Date.parse(data.next_attempt_at) - before)).toBeLessThan(5000);
    expect(response.json()).not.toHaveProperty('data.attempt_history');

    const finished = await eventually(
      async () => (await api.request({ path: `/webhook-events/${failed.id}`, key: org.apiKey })).json().data,
      (event) => event.status === 'SUCCESS',
    );
    expect(finished).toMatchObject({ attempts: 2, last_response_code: 204, next_attempt_at: null });
    expect(finished.attempt_history.map((a: { response_code: number }) => a.response_code)).toEqual([
      500, 204,
    ]);
    const deliveries = receiver.deliveries.filter((d) => d.headers['x-service-delivery'] === failed.id);
    expect(deliveries).toHaveLength(2);
    expect(deliveries[1]!.body).toBe(deliveries[0]!.body);
  });

  it('refuses to retry a SUCCESS event with 409 CONFLICT', async () => {
    const [succeeded] = (await list('?status=SUCCESS&limit=1')).json().data;
    const response = await retry(succeeded.id);
    expect(response.statusCode).toBe(409);
    expect(response.json()).toMatchObject({
      error_code: 'CONFLICT',
      request_id: expect.stringMatching(UUID),
    });
    const after = await api.request({ path: `/webhook-events/${succeeded.id}`, key: org.apiKey });
    expect(after.json().data).toMatchObject({ status: 'SUCCESS', attempts: succeeded.attempts });
  });

  it('accepts a retry while the endpoint is disabled; it ends FAILED unsent, saying why, and is delivered once enabled', async () => {
    succeedB = false;
    const [failed] = (await list(`?endpoint_id=${endpointB}&status=FAILED`)).json().data;
    const sent = () =>
      receiver.deliveries.filter((d) => d.headers['x-service-delivery'] === failed.id).length;
    const sentBefore = sent();
    const patch = (status: string) =>
      api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${endpointB}`,
        key: org.apiKey,
        payload: { status },
      });
    expect((await patch('DISABLED')).statusCode).toBe(200);
    const accepted = await retry(failed.id);
    expect(accepted.statusCode).toBe(202);
    expect(accepted.json().data).toMatchObject({ id: failed.id, status: 'RETRYING' });
    const unsent = await eventually(
      async () => (await api.request({ path: `/webhook-events/${failed.id}`, key: org.apiKey })).json().data,
      (event) => event.status === 'FAILED',
    );
    expect(unsent).toMatchObject({
      attempts: failed.attempts,
      last_response_body: 'Not delivered: the endpoint was disabled.',
      next_attempt_at: null,
    });
    expect(sent()).toBe(sentBefore);

    expect((await patch('ACTIVE')).statusCode).toBe(200);
    expect((await retry(failed.id)).statusCode).toBe(202);
    await eventually(
      async () => (await api.request({ path: `/webhook-events/${failed.id}`, key: org.apiKey })).json().data,
      (event) => event.status === 'FAILED' && event.attempts === failed.attempts + 1,
    );
    expect(sent()).toBe(sentBefore + 1);
  });

  it('a retry of an event FAILED by disabling its endpoint midway allows exactly one more attempt', async () => {
    await dispatcher?.stop();
    const third = await createTestOrg(api.platform.db);
    const failing = await startReceiver(() => ({ status: 500, body: 'down' }));
    // a long retry delay: the event sits RETRYING 1/5 until its endpoint is disabled
    dispatcher = startDispatcher(api.platform.db, { maxAttempts: 5, retryDelaysMs: [60_000] });
    try {
      const endpoint = await createEndpoint(third.apiKey, failing.url, ['invoice.*']);
      await emit(api.platform.db, third.orgId, 'invoice.paid', { id: 'inv-c', object: 'invoice' });
      const read = async (id: string) =>
        (await api.request({ path: `/webhook-events/${id}`, key: third.apiKey })).json().data;
      const [stored] = await eventually(
        () => storedEvents(api.platform.db, endpoint),
        (events) => events[0]?.status === 'RETRYING',
      );
      const patch = (status: string) =>
        api.request({
          method: 'PATCH',
          path: `/webhook-endpoints/${endpoint}`,
          key: third.apiKey,
          payload: { status },
        });
      expect((await patch('DISABLED')).statusCode).toBe(200);
      expect(await read(stored!.id)).toMatchObject({ status: 'FAILED', attempts: 1, max_attempts: 5 });
      expect((await patch('ACTIVE')).statusCode).toBe(200);

      const accepted = await api.request({
        method: 'POST',
        path: `/webhook-events/${stored!.id}/retry`,
        key: third.apiKey,
      });
      expect(accepted.json().data).toMatchObject({ status: 'RETRYING', attempts: 1, max_attempts: 2 });
      const finished = await eventually(
        () => read(stored!.id),
        (event) => event.status !== 'RETRYING' || event.attempts > 1,
      );
      expect(finished).toMatchObject({
        status: 'FAILED',
        attempts: 2,
        max_attempts: 2,
        next_attempt_at: null,
      });
      expect(failing.deliveries).toHaveLength(2);
    } finally {
      await failing.close();
    }
  });

  it('a retry of a RETRYING event makes the next attempt now and keeps its remaining automatic retries', async () => {
    await dispatcher?.stop();
    const fourth = await createTestOrg(api.platform.db);
    const failing = await startReceiver(() => ({ status: 500, body: 'down' }));
    dispatcher = startDispatcher(api.platform.db, { maxAttempts: 5, retryDelaysMs: [60_000] });
    try {
      const endpoint = await createEndpoint(fourth.apiKey, failing.url, ['invoice.*']);
      await emit(api.platform.db, fourth.orgId, 'invoice.paid', { id: 'inv-d', object: 'invoice' });
      const [stored] = await eventually(
        () => storedEvents(api.platform.db, endpoint),
        (events) => events[0]?.status === 'RETRYING',
      );
      const accepted = await api.request({
        method: 'POST',
        path: `/webhook-events/${stored!.id}/retry`,
        key: fourth.apiKey,
      });
      expect(accepted.statusCode).toBe(202);
      expect(accepted.json().data).toMatchObject({ status: 'RETRYING', attempts: 1, max_attempts: 5 });
      const [after] = await eventually(
        () => storedEvents(api.platform.db, endpoint),
        (events) => (events[0]?.attempts ?? 0) >= 2,
      );
      expect(after).toMatchObject({ status: 'RETRYING', attempts: 2 });
      expect(failing.deliveries).toHaveLength(2);
    } finally {
      await failing.close();
    }
  });

  it("never shows or retries another organization's events", async () => {
    const listed = (await list('?limit=100')).json().data.map((e: { id: string }) => e.id);
    expect(listed).not.toContain(foreignEvent);
    expect((await list(`?endpoint_id=${foreignEvent}`)).json().data).toEqual([]);
    const read = await api.request({ path: `/webhook-events/${foreignEvent}`, key: org.apiKey });
    expect(read.statusCode).toBe(404);
    const retried = await retry(foreignEvent);
    expect(retried.statusCode).toBe(404);
    const missing = await retry(MISSING_ID);
    expect(retried.json().detail.replace(foreignEvent, '<id>')).toBe(
      missing.json().detail.replace(MISSING_ID, '<id>'),
    );
    const own = await api.request({ path: `/webhook-events/${foreignEvent}`, key: other.apiKey });
    expect(own.statusCode).toBe(200);
    expect(own.json().data.attempts).toBe(1);
    const ownList = (await list('?limit=100', other.apiKey)).json().data.map((e: { id: string }) => e.id);
    expect(ownList).toContain(foreignEvent);
  });

  describe('GET /webhook-events', () => {
    runCommonRouteTests(() => ({
      api,
      key: org.apiKey,
      request: { method: 'GET', path: '/webhook-events' },
    }));
  });

  describe('GET /webhook-events/{event_id}', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: org.apiKey,
        request: { method: 'GET', path: `/webhook-events/${eventOfA}` },
        crossOrg: { path: (id) => `/webhook-events/${id}`, foreignId: foreignEvent, missingId: MISSING_ID },
      }),
      { namesRecord: true },
    );
  });

  describe('POST /webhook-events/{event_id}/retry', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: org.apiKey,
        // a SUCCESS event by now: the owner gets 409 every time, the answer the suite expects
        request: { method: 'POST', path: `/webhook-events/${eventOfA}/retry` },
        expectedStatus: 409,
        crossOrg: {
          path: (id) => `/webhook-events/${id}/retry`,
          foreignId: foreignEvent,
          missingId: MISSING_ID,
        },
      }),
      { namesRecord: true },
    );
  });
});
