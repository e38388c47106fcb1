import { createHmac } from 'node:crypto';
import { verify } from '@octokit/webhooks-methods';
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
  sleep,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

describe('webhook delivery', () => {
  let api: TestApi;
  let org: TestOrg;
  let dispatcher: WebhookDispatcher;
  const receivers: Receiver[] = [];

  beforeAll(async () => {
    api = await startTestApi();
    org = await createTestOrg(api.platform.db);
    dispatcher = startDispatcher(api.platform.db, { timeoutMs: 500, retryDelaysMs: [300, 50, 50, 50] });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await Promise.all(receivers.map((receiver) => receiver.close()));
    await api?.close();
  });

  async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
    const started = await startReceiver(...args);
    receivers.push(started);
    return started;
  }

  async function createEndpoint(
    url: string,
    events: string[],
    extra: Record<string, unknown> = {},
    key = org.apiKey,
  ): Promise<{ id: string; secret: string }> {
    const response = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key,
      payload: { url, events, ...extra },
    });
    expect(response.statusCode, response.body).toBe(201);
    return response.json().data;
  }

  /**
   * An event whose first attempt failed (RETRYING), then `change` (SQL on the endpoint's id) made
   * behind the dispatcher's back: the event as it ends, and its receiver.
   */
  async function endedAfter(change: string) {
    const target = await receiver(() => ({ status: 503, body: 'down' }));
    const endpoint = await createEndpoint(target.url, ['invoice.posted']);
    await emit(api.platform.db, org.orgId, 'invoice.posted');
    await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'RETRYING',
    );
    await api.platform.db.query(change, [endpoint.id]);
    const [ended] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'FAILED',
    );
    return { ended, target };
  }

  it('POSTs the compact JSON payload, signed over the raw body, with the spec headers', async () => {
    const target = await receiver();
    const endpoint = await createEndpoint(target.url, ['invoice.*']);
    const data = {
      id: 'a1b2',
      object: 'invoice',
      customer_id: 7,
      status: 'PAID',
      total: '10.00000000',
      note: 'é ✓',
    };
    const before = Math.floor(Date.now() / 1000);
    await emit(api.platform.db, org.orgId, 'invoice.paid', data);

    const [delivery] = await target.waitFor(1);
    const { headers, body } = delivery!;
    const payload = JSON.parse(body);
    const [stored] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'SUCCESS',
    );

    expect(payload).toEqual({ id: stored!.id, type: 'invoice.paid', created: expect.any(Number), data });
    expect(payload.created).toBeGreaterThanOrEqual(before - 1);
    expect(payload.created).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(body).toBe(JSON.stringify(payload));
    expect(stored!.payload).toBe(body);
    expect(headers['content-type']).toBe('application/json');
    expect(headers['user-agent']).toBe('Service-Webhooks/1.0');
    expect(headers['x-service-event']).toBe('invoice.paid');
    expect(headers['x-service-delivery']).toBe(stored!.id);

    const signature = headers['x-service-signature'] as string;
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verify(endpoint.secret, body, signature)).toBe(true);
    expect(signature).toBe(
      `sha256=${createHmac('sha256', endpoint.secret).update(Buffer.from(body)).digest('hex')}`,
    );
    expect(await verify(endpoint.secret, JSON.stringify(payload, null, 1), signature)).toBe(false);

    expect(stored).toMatchObject({
      status: 'SUCCESS',
      attempts: 1,
      last_response_code: 200,
      last_response_body: 'ok',
    });
    expect(await attemptsOf(api.platform.db, stored!.id)).toEqual([
      expect.objectContaining({ attempt: 1, response_code: 200 }),
    ]);
  });

  it('matches exact names and family wildcards, within the organization only', async () => {
    const target = await receiver();
    const exact = await createEndpoint(`${target.url}?to=exact`, ['invoice.paid']);
    const family = await createEndpoint(`${target.url}?to=family`, ['invoice.*']);
    const mixed = await createEndpoint(`${target.url}?to=mixed`, ['subscription.*', 'payment.succeeded']);
    const posted = await createEndpoint(`${target.url}?to=posted`, ['invoice.posted']);
    const other = await createTestOrg(api.platform.db);
    await createEndpoint(
      `${target.url}?to=other-org`,
      ['invoice.*', 'subscription.*', 'payment.*'],
      {},
      other.apiKey,
    );

    for (const type of [
      'invoice.paid',
      'subscription.created',
      'payment.succeeded',
      'invoice.posted',
    ] as const) {
      await emit(api.platform.db, org.orgId, type);
    }
    // 1 (exact) + 2 (family) + 2 (mixed) + 1 (posted)
    await target.waitFor(6);
    await sleep(300);
    const received = (to: string) =>
      target.deliveries
        .filter((d) => d.url.endsWith(`to=${to}`))
        .map((d) => d.headers['x-service-event'])
        .sort();
    expect(received('exact')).toEqual(['invoice.paid']);
    expect(received('family')).toEqual(['invoice.paid', 'invoice.posted']);
    expect(received('mixed')).toEqual(['payment.succeeded', 'subscription.created']);
    expect(received('posted')).toEqual(['invoice.posted']);
    expect(received('other-org')).toEqual([]);
    expect(target.deliveries).toHaveLength(6);
    for (const endpoint of [exact, family, mixed, posted]) {
      expect((await storedEvents(api.platform.db, endpoint.id)).every((e) => e.status === 'SUCCESS')).toBe(
        true,
      );
    }
  });

  it('sends nothing to DISABLED or deleted endpoints', async () => {
    const target = await receiver();
    const active = await createEndpoint(`${target.url}?to=active`, ['invoice.*']);
    const createdDisabled = await createEndpoint(`${target.url}?to=created-disabled`, ['invoice.*'], {
      status: 'DISABLED',
    });
    const disabledLater = await createEndpoint(`${target.url}?to=disabled-later`, ['invoice.*']);
    const deleted = await createEndpoint(`${target.url}?to=deleted`, ['invoice.*']);
    const patch = await api.request({
      method: 'PATCH',
      path: `/webhook-endpoints/${disabledLater.id}`,
      key: org.apiKey,
      payload: { status: 'DISABLED' },
    });
    expect(patch.statusCode).toBe(200);
    const removal = await api.request({
      method: 'DELETE',
      path: `/webhook-endpoints/${deleted.id}`,
      key: org.apiKey,
    });
    expect(removal.statusCode).toBe(204);

    await emit(api.platform.db, org.orgId, 'invoice.posted');
    await target.waitFor(1);
    await sleep(300);
    expect(target.deliveries.map((d) => d.url)).toEqual(['/hooks?to=active']);
    expect(await storedEvents(api.platform.db, active.id)).toHaveLength(1);
    for (const endpoint of [createdDisabled, disabledLater, deleted]) {
      expect(await storedEvents(api.platform.db, endpoint.id)).toEqual([]);
    }
  });

  it('stops the pending deliveries of an endpoint deleted while it retries; its history stays', async () => {
    const target = await receiver(() => ({ status: 503, body: 'down' }));
    const endpoint = await createEndpoint(target.url, ['subscription.canceled']);
    await emit(api.platform.db, org.orgId, 'subscription.canceled');
    await target.waitFor(1);
    await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'RETRYING',
    );
    const removal = await api.request({
      method: 'DELETE',
      path: `/webhook-endpoints/${endpoint.id}`,
      key: org.apiKey,
    });
    expect(removal.statusCode).toBe(204);
    await sleep(500);
    expect(target.deliveries).toHaveLength(1);
    const history = await api.request({
      path: `/webhook-events?endpoint_id=${endpoint.id}`,
      key: org.apiKey,
    });
    expect(history.statusCode).toBe(200);
    expect(history.json().data).toEqual([
      expect.objectContaining({
        status: 'FAILED',
        attempts: 1,
        last_response_code: 503,
        last_response_body: 'Not delivered: the endpoint was deleted.',
        next_attempt_at: null,
      }),
    ]);
  });

  it('ends FAILED unsent an event found due for an endpoint disabled behind its back', async () => {
    // A fan-out that read the endpoint ACTIVE can commit its event after a concurrent PATCH ended
    // the pending ones: the dispatcher checks the endpoint again when it claims the event
    // (libs/webhooks/delivery.ts, "endpoint disabled or deleted meanwhile").
    const { ended, target } = await endedAfter(
      `UPDATE webhook_endpoints SET status = 'DISABLED' WHERE id = $1`,
    );
    expect(ended).toMatchObject({
      attempts: 1,
      last_response_body: 'Not delivered: the endpoint was disabled.',
    });
    expect(target.deliveries).toHaveLength(1);
  });

  it('ends FAILED unsent an event found due for an endpoint deleted behind its back', async () => {
    // deleted without ending its events, as a delete racing a fan-out can leave them
    const { ended, target } = await endedAfter(
      'UPDATE webhook_endpoints SET deleted_at = now() WHERE id = $1',
    );
    expect(ended).toMatchObject({
      attempts: 1,
      last_response_body: 'Not delivered: the endpoint was deleted.',
    });
    expect(target.deliveries).toHaveLength(1);
  });

  it('records an attempt that reached the receiver while its endpoint was disabled, the event left FAILED', async () => {
    // the receiver answers after 300 ms (within the 500 ms timeout): the PATCH lands mid-attempt
    const own = await createTestOrg(api.platform.db);
    const target = await receiver(() => ({ status: 200, delayMs: 300 }));
    const endpoint = await createEndpoint(target.url, ['invoice.paid'], {}, own.apiKey);
    await emit(api.platform.db, own.orgId, 'invoice.paid');
    await target.waitFor(1);
    const patch = await api.request({
      method: 'PATCH',
      path: `/webhook-endpoints/${endpoint.id}`,
      key: own.apiKey,
      payload: { status: 'DISABLED' },
    });
    expect(patch.statusCode).toBe(200);
    const [stored] = await storedEvents(api.platform.db, endpoint.id);
    const history = await eventually(
      () => attemptsOf(api.platform.db, stored!.id),
      (rows) => rows.length > 0,
      3000,
    );
    expect(history).toEqual([expect.objectContaining({ attempt: 1, response_code: 200 })]);
    const event = await api.request({ path: `/webhook-events/${stored!.id}`, key: own.apiKey });
    expect(event.json().data).toMatchObject({
      status: 'FAILED',
      attempts: 1,
      last_response_code: 200,
      last_response_body: 'Not delivered: the endpoint was disabled.',
      next_attempt_at: null,
      attempt_history: [expect.objectContaining({ attempt: 1, response_code: 200 })],
    });
    expect(target.deliveries).toHaveLength(1);
  });

  it('retries a 500 and succeeds on the next 200: RETRYING, then SUCCESS with two attempts', async () => {
    const target = await receiver((_, count) =>
      count === 1 ? { status: 500, body: 'boom' } : { status: 200 },
    );
    const endpoint = await createEndpoint(target.url, ['payment.succeeded']);
    await emit(api.platform.db, org.orgId, 'payment.succeeded');

    const [retrying] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.attempts === 1,
    );
    expect(retrying).toMatchObject({
      status: 'RETRYING',
      last_response_code: 500,
      last_response_body: 'boom',
    });
    const [succeeded] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'SUCCESS',
    );
    expect(succeeded).toMatchObject({ attempts: 2, last_response_code: 200 });
    expect((await attemptsOf(api.platform.db, succeeded!.id)).map((a) => a.response_code)).toEqual([
      500, 200,
    ]);
    const [first, second] = target.deliveries;
    // the same delivery: same id, same bytes, same signature
    expect(second!.body).toBe(first!.body);
    expect(second!.headers['x-service-delivery']).toBe(first!.headers['x-service-delivery']);
    expect(second!.headers['x-service-signature']).toBe(first!.headers['x-service-signature']);
  });

  it('gives up after five failed attempts: FAILED', async () => {
    const target = await receiver(() => ({ status: 500, body: 'still broken' }));
    const endpoint = await createEndpoint(target.url, ['invoice.posted']);
    await emit(api.platform.db, org.orgId, 'invoice.posted');
    const [failed] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'FAILED',
    );
    expect(failed).toMatchObject({
      attempts: 5,
      last_response_code: 500,
      last_response_body: 'still broken',
    });
    expect((await attemptsOf(api.platform.db, failed!.id)).map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5]);
    await sleep(300);
    expect(target.deliveries).toHaveLength(5);
  });

  it('records a receiver that hangs past the timeout as 408', async () => {
    const target = await receiver(() => ({ status: 200, delayMs: 2000 }));
    const endpoint = await createEndpoint(target.url, ['invoice.posted']);
    await emit(api.platform.db, org.orgId, 'invoice.posted');
    const [event] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => (rows[0]?.attempts ?? 0) >= 1,
    );
    expect(event).toMatchObject({ status: 'RETRYING', last_response_code: 408 });
    const [first] = await attemptsOf(api.platform.db, event!.id);
    expect(first).toMatchObject({ attempt: 1, response_code: 408 });
    expect(first!.duration_ms).toBeGreaterThanOrEqual(450);
    expect(first!.duration_ms).toBeLessThan(1500);
  });

  it('records a closed port as response code 0', async () => {
    const port = await freeTcpPort();
    const endpoint = await createEndpoint(`http://127.0.0.1:${port}/hooks`, ['invoice.posted']);
    await emit(api.platform.db, org.orgId, 'invoice.posted');
    const [event] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => (rows[0]?.attempts ?? 0) >= 1,
    );
    expect(event).toMatchObject({ status: 'RETRYING', last_response_code: 0 });
    expect(event!.last_response_body).toContain('ECONNREFUSED');
  });

  it('keeps the last 1000 characters of a long response body', async () => {
    // 3500 bytes of UTF-8: the bytes kept must allow 4 per character, not fewer
    const tail = `${'é'.repeat(100)}${'😀'.repeat(800)}${'0123456789'.repeat(10)}`;
    const body = `${'x'.repeat(4000)}${tail}`;
    expect([...tail]).toHaveLength(1000);
    const target = await receiver(() => ({
      status: 200,
      body,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
    }));
    const endpoint = await createEndpoint(target.url, ['invoice.paid']);
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const [event] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'SUCCESS',
    );
    expect(event!.last_response_body).toBe(tail);
    const [first] = await attemptsOf(api.platform.db, event!.id);
    expect(first!.response_body).toBe(tail);
  });

  it('records a response body holding NUL characters without them (Postgres text cannot store NUL)', async () => {
    const target = await receiver(() => ({ status: 200, body: 'ok\u0000\u0000done' }));
    const endpoint = await createEndpoint(target.url, ['invoice.paid']);
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const [event] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => rows[0]?.status === 'SUCCESS',
    );
    expect(event).toMatchObject({ attempts: 1, last_response_code: 200, last_response_body: 'okdone' });
    expect(await attemptsOf(api.platform.db, event!.id)).toEqual([
      expect.objectContaining({ attempt: 1, response_code: 200, response_body: 'okdone' }),
    ]);
  });

  it('treats a redirect as a failure and does not follow it', async () => {
    const elsewhere = await receiver();
    const target = await receiver(() => ({
      status: 302,
      headers: { location: elsewhere.url },
      body: 'moved',
    }));
    const endpoint = await createEndpoint(target.url, ['invoice.paid']);
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    const [event] = await eventually(
      () => storedEvents(api.platform.db, endpoint.id),
      (rows) => (rows[0]?.attempts ?? 0) >= 1,
    );
    expect(event).toMatchObject({ status: 'RETRYING', last_response_code: 302 });
    expect(elsewhere.deliveries).toHaveLength(0);
  });

  it('fails on 300 as on any answer outside 2xx, and succeeds on 299', async () => {
    // docs/decisions.md: redirects are failures; only a 2xx delivers
    for (const [status, expected] of [
      [300, 'RETRYING'],
      [299, 'SUCCESS'],
    ] as const) {
      const target = await receiver(() => ({ status }));
      const endpoint = await createEndpoint(target.url, ['invoice.paid']);
      await emit(api.platform.db, org.orgId, 'invoice.paid');
      const [event] = await eventually(
        () => storedEvents(api.platform.db, endpoint.id),
        (rows) => (rows[0]?.attempts ?? 0) >= 1,
      );
      expect(event, String(status)).toMatchObject({ status: expected, last_response_code: status });
      await api.request({ method: 'DELETE', path: `/webhook-endpoints/${endpoint.id}`, key: org.apiKey });
    }
  });
});
