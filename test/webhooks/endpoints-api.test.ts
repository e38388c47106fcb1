import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { getEndpoint } from '../../libs/webhooks/endpoints.js';
import { fanOutOutbox, signingKeyId } from '../../libs/webhooks/index.js';
import type { ApiInstance } from '../../services/api/types.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { runCommonRouteTests } from '../helpers/route-suite.js';
import { buildApiWithoutLocalhost, emit, storedEvents } from './support.js';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const MISSING_ID = '6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11';

describe('webhook endpoints API', () => {
  let api: TestApi;
  let org: TestOrg;
  let other: TestOrg;
  let ownEndpointId: string;
  let foreignEndpointId: string;

  beforeAll(async () => {
    api = await startTestApi();
    org = await createTestOrg(api.platform.db);
    other = await createTestOrg(api.platform.db);
    ownEndpointId = (await create({ url: 'https://hooks.example.com/own', events: ['invoice.*'] })).json()
      .data.id;
    foreignEndpointId = (
      await create({ url: 'https://hooks.example.com/foreign', events: ['invoice.*'] }, other.apiKey)
    ).json().data.id;
  });
  afterAll(async () => {
    await api?.close();
  });

  function create(payload: unknown, key = org.apiKey) {
    return api.request({ method: 'POST', path: '/webhook-endpoints', key, payload: payload as object });
  }

  function expectValidationError(
    response: { statusCode: number; json(): unknown; body: string },
    field: string,
  ) {
    expect(response.statusCode, response.body).toBe(422);
    const body = response.json() as { error_code: string; details: { field: string; code: string }[] };
    expect(body.error_code).toBe('VALIDATION_ERROR');
    expect(body.details.map((detail) => detail.field)).toContain(field);
    return body.details.find((detail) => detail.field === field)!;
  }

  describe('POST /webhook-endpoints', () => {
    runCommonRouteTests(() => ({
      api,
      key: org.apiKey,
      request: {
        method: 'POST',
        path: '/webhook-endpoints',
        body: { url: 'https://hooks.example.com/suite', events: ['payment.*'] },
      },
      expectedStatus: 201,
    }));

    it('answers 201 with the endpoint, its defaults, and the signing secret', async () => {
      const response = await create({
        url: 'https://hooks.example.com/a',
        events: ['invoice.paid', 'subscription.*'],
      });
      expect(response.statusCode).toBe(201);
      const { data } = response.json();
      expect(data).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        object: 'webhook_endpoint',
        url: 'https://hooks.example.com/a',
        events: ['invoice.paid', 'subscription.*'],
        status: 'ACTIVE',
        description: '',
        secret_key_id: signingKeyId(data.secret),
        previous_secret_key_id: null,
        previous_secret_expires_at: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
        secret: expect.stringMatching(SECRET),
      });
      const again = await create({ url: 'https://hooks.example.com/a', events: ['invoice.paid'] });
      expect(again.json().data.secret).not.toBe(data.secret);
    });

    it('accepts a description, a DISABLED status, and drops repeated events', async () => {
      const response = await create({
        url: 'https://hooks.example.com/b',
        events: ['invoice.paid', 'invoice.*', 'invoice.paid'],
        description: 'ERP sync',
        status: 'DISABLED',
      });
      expect(response.statusCode).toBe(201);
      expect(response.json().data).toMatchObject({
        events: ['invoice.paid', 'invoice.*'],
        description: 'ERP sync',
        status: 'DISABLED',
      });
    });

    it('shows the secret only in the creation response', async () => {
      const created = (await create({ url: 'https://hooks.example.com/c', events: ['invoice.paid'] })).json()
        .data;
      const reads = [
        await api.request({ path: `/webhook-endpoints/${created.id}`, key: org.apiKey }),
        await api.request({ path: '/webhook-endpoints?limit=100', key: org.apiKey }),
        await api.request({
          method: 'PATCH',
          path: `/webhook-endpoints/${created.id}`,
          key: org.apiKey,
          payload: { description: 'renamed' },
        }),
      ];
      for (const response of reads) {
        expect(response.statusCode).toBe(200);
        expect(response.body).not.toContain(created.secret);
        expect(response.body).not.toContain('"secret"');
        expect(response.body).not.toContain('whsec_');
      }
    });

    it('requires url and events', async () => {
      expect(expectValidationError(await create({ events: ['invoice.paid'] }), 'url').code).toBe('required');
      expect(expectValidationError(await create({ url: 'https://hooks.example.com' }), 'events').code).toBe(
        'required',
      );
      const both = await create({});
      expectValidationError(both, 'url');
      expectValidationError(both, 'events');
    });

    it('requires an https URL; http only for localhost and 127.0.0.1 while allowed', async () => {
      for (const url of [
        'not a url',
        'hooks.example.com/x',
        'ftp://hooks.example.com/',
        'http://hooks.example.com/x',
      ]) {
        expectValidationError(await create({ url, events: ['invoice.paid'] }), 'url');
      }
      expectValidationError(await create({ url: 42, events: ['invoice.paid'] }), 'url');
      expectValidationError(
        await create({ url: `https://x.example.com/${'a'.repeat(2048)}`, events: ['invoice.paid'] }),
        'url',
      );
      for (const url of ['http://localhost:3000/hooks', 'http://127.0.0.1:8999/x', 'http://localhost/']) {
        expect((await create({ url, events: ['invoice.paid'] })).statusCode, url).toBe(201);
      }
    });

    it('refuses localhost URLs where WEBHOOK_ALLOW_LOCALHOST is false', async () => {
      const production: ApiInstance = await buildApiWithoutLocalhost(api);
      try {
        for (const url of [
          'http://localhost:3000/hooks',
          'http://127.0.0.1:8999/x',
          'https://localhost/x',
          'https://127.0.0.1/',
          // a fully qualified name with its trailing dot is the same host
          'https://localhost./x',
          'https://hooks.localhost./x',
          'https://[::1]/hooks',
        ]) {
          const response = await production.inject({
            method: 'POST',
            url: `${BASE_PATH}/webhook-endpoints`,
            headers: { authorization: `Bearer ${org.apiKey}` },
            payload: { url, events: ['invoice.paid'] },
          });
          expectValidationError(response, 'url');
        }
        const https = await production.inject({
          method: 'POST',
          url: `${BASE_PATH}/webhook-endpoints`,
          headers: { authorization: `Bearer ${org.apiKey}` },
          payload: { url: 'https://hooks.example.com/prod', events: ['invoice.paid'] },
        });
        expect(https.statusCode).toBe(201);
      } finally {
        await production.close();
      }
    });

    it('refuses credentials in the URL, port 0, and literal private or link-local addresses', async () => {
      for (const url of [
        'https://user:pass@hooks.example.com/',
        'https://10.0.0.1/hooks',
        'https://169.254.169.254/latest/meta-data',
        'https://192.168.1.1/',
        'https://hooks.example.com:0/x',
      ]) {
        const detail = expectValidationError(await create({ url, events: ['invoice.paid'] }), 'url');
        expect(detail.code, url).toBe('invalid_value');
      }
    });

    it('requires a non-empty list of known event names or family wildcards, naming the bad entry', async () => {
      expect(
        expectValidationError(await create({ url: 'https://h.example.com', events: [] }), 'events').code,
      ).toBe('too_short');
      expectValidationError(await create({ url: 'https://h.example.com', events: 'invoice.paid' }), 'events');
      for (const bad of ['invoice.deleted', '*', 'invoice', 'refund.*', 'INVOICE.PAID', '']) {
        const response = await create({ url: 'https://h.example.com', events: ['invoice.paid', bad] });
        const detail = expectValidationError(response, 'events.1');
        expect(detail.code, bad).toBe('invalid_value');
      }
      expectValidationError(
        await create({ url: 'https://h.example.com', events: ['invoice.paid', 7] }),
        'events.1',
      );
      for (const reserved of [
        'order.created',
        'customer.updated',
        'invoice.overdue',
        'order.*',
        'customer.*',
      ]) {
        expect(
          (await create({ url: 'https://h.example.com', events: [reserved] })).statusCode,
          reserved,
        ).toBe(201);
      }
    });

    it('takes a list of up to 50 entries, repeats included, and refuses a 51st', async () => {
      const fifty = await create({ url: 'https://h.example.com', events: Array(50).fill('invoice.paid') });
      expect(fifty.statusCode, fifty.body).toBe(201);
      expect(fifty.json().data.events).toEqual(['invoice.paid']);
      expect(
        expectValidationError(
          await create({ url: 'https://h.example.com', events: Array(51).fill('invoice.paid') }),
          'events',
        ).code,
      ).toBe('too_long');
    });

    it('validates description and status, and rejects unknown fields', async () => {
      const base = { url: 'https://h.example.com', events: ['invoice.paid'] };
      expect(
        expectValidationError(await create({ ...base, description: 'x'.repeat(501) }), 'description').code,
      ).toBe('too_long');
      expectValidationError(await create({ ...base, description: 5 }), 'description');
      expect(expectValidationError(await create({ ...base, status: 'PAUSED' }), 'status').code).toBe(
        'invalid_value',
      );
      expect(expectValidationError(await create({ ...base, secret: 'whsec_mine' }), 'secret').code).toBe(
        'unknown_field',
      );
      // text Postgres cannot store is a 422 naming the field, not a failed insert
      expectValidationError(await create({ ...base, description: 'a\u0000b' }), 'description');
      expectValidationError(await create({ ...base, url: 'https://h.example.com/\u0000' }), 'url');
    });

    it('answers 400 for malformed JSON and 415 for another content type', async () => {
      const malformed = await api.request({
        method: 'POST',
        path: '/webhook-endpoints',
        key: org.apiKey,
        headers: { 'content-type': 'application/json' },
        payload: '{"url": ',
      });
      expect(malformed.statusCode).toBe(400);
      expect(malformed.json().error_code).toBe('BAD_REQUEST');
      const text = await api.request({
        method: 'POST',
        path: '/webhook-endpoints',
        key: org.apiKey,
        headers: { 'content-type': 'text/plain' },
        payload: 'url=https://h.example.com',
      });
      expect(text.statusCode).toBe(415);
    });
  });

  describe('GET /webhook-endpoints', () => {
    runCommonRouteTests(() => ({
      api,
      key: org.apiKey,
      request: { method: 'GET', path: '/webhook-endpoints' },
    }));

    it('lists newest first with pagination and a status filter, own organization only', async () => {
      const lister = await createTestOrg(api.platform.db);
      const ids: string[] = [];
      for (const [index, status] of ['ACTIVE', 'DISABLED', 'ACTIVE', 'ACTIVE'].entries()) {
        const response = await create(
          { url: `https://h.example.com/${index}`, events: ['invoice.paid'], status },
          lister.apiKey,
        );
        ids.push(response.json().data.id);
      }
      const all = await api.request({ path: '/webhook-endpoints', key: lister.apiKey });
      expect(all.json().data.map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
      expect(all.json().pagination).toEqual({ limit: 25, offset: 0, total: 4, has_more: false });

      const page = await api.request({ path: '/webhook-endpoints?limit=2&offset=1', key: lister.apiKey });
      expect(page.json().data.map((e: { id: string }) => e.id)).toEqual([ids[2], ids[1]]);
      expect(page.json().pagination).toEqual({ limit: 2, offset: 1, total: 4, has_more: true });
      const last = await api.request({ path: '/webhook-endpoints?limit=2&offset=2', key: lister.apiKey });
      expect(last.json().pagination.has_more).toBe(false);

      const active = await api.request({
        path: '/webhook-endpoints?status=ACTIVE&limit=1',
        key: lister.apiKey,
      });
      expect(active.json().data.map((e: { id: string }) => e.id)).toEqual([ids[3]]);
      expect(active.json().pagination).toEqual({ limit: 1, offset: 0, total: 3, has_more: true });
      const disabled = await api.request({ path: '/webhook-endpoints?status=DISABLED', key: lister.apiKey });
      expect(disabled.json().data.map((e: { id: string }) => e.id)).toEqual([ids[1]]);
    });

    it('rejects out-of-range pagination and unknown statuses with 422', async () => {
      for (const [query, field] of [
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['limit=abc', 'limit'],
        ['offset=-1', 'offset'],
        ['status=PAUSED', 'status'],
        ['status=active', 'status'],
      ] as const) {
        expectValidationError(
          await api.request({ path: `/webhook-endpoints?${query}`, key: org.apiKey }),
          field,
        );
      }
    });
  });

  describe('GET /webhook-endpoints/{endpoint_id}', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: org.apiKey,
        request: { method: 'GET', path: `/webhook-endpoints/${ownEndpointId}` },
        crossOrg: {
          path: (id) => `/webhook-endpoints/${id}`,
          foreignId: foreignEndpointId,
          missingId: MISSING_ID,
        },
      }),
      { namesRecord: true },
    );

    it('answers 404 for an id that is not a UUID, like a missing one', async () => {
      for (const path of [
        '/webhook-endpoints/123',
        '/webhook-events/not-a-uuid',
        '/webhook-events/123/retry',
      ]) {
        const response = await api.request({
          path,
          key: org.apiKey,
          method: path.endsWith('retry') ? 'POST' : 'GET',
        });
        expect(response.statusCode, path).toBe(404);
        expect(response.json().error_code).toBe('NOT_FOUND');
      }
    });
  });

  describe('PATCH /webhook-endpoints/{endpoint_id}', () => {
    runCommonRouteTests(
      () => ({
        api,
        key: org.apiKey,
        request: {
          method: 'PATCH',
          path: `/webhook-endpoints/${ownEndpointId}`,
          body: { description: 'suite' },
        },
        crossOrg: {
          path: (id) => `/webhook-endpoints/${id}`,
          foreignId: foreignEndpointId,
          missingId: MISSING_ID,
        },
      }),
      { namesRecord: true },
    );

    it('changes url, events, status and description and answers 200 with the endpoint', async () => {
      const created = (await create({ url: 'https://h.example.com/old', events: ['invoice.paid'] })).json()
        .data;
      const patch = (payload: object) =>
        api.request({ method: 'PATCH', path: `/webhook-endpoints/${created.id}`, key: org.apiKey, payload });
      const response = await patch({
        url: 'https://h.example.com/new',
        events: ['payment.*', 'payment.*'],
        status: 'DISABLED',
        description: 'moved',
      });
      expect(response.statusCode).toBe(200);
      const updated = response.json().data;
      expect(updated).toMatchObject({
        id: created.id,
        url: 'https://h.example.com/new',
        events: ['payment.*'],
        status: 'DISABLED',
        description: 'moved',
        created_at: created.created_at,
      });
      expect(updated.updated_at >= created.updated_at).toBe(true);
      const enabled = (await patch({ status: 'ACTIVE' })).json().data;
      expect(enabled).toMatchObject({
        status: 'ACTIVE',
        description: 'moved',
      });
      const unchanged = await patch({});
      expect(unchanged.statusCode).toBe(200);
      expect(unchanged.json().data).toMatchObject({ url: 'https://h.example.com/new', status: 'ACTIVE' });
      // a patch that names no field changes nothing, updated_at included
      expect(unchanged.json().data.updated_at).toBe(enabled.updated_at);
      const read = await api.request({ path: `/webhook-endpoints/${created.id}`, key: org.apiKey });
      expect(read.json().data).toEqual(unchanged.json().data);
    });

    it('moves updated_at to the time of the change', async () => {
      const created = (await create({ url: 'https://h.example.com/stamp', events: ['invoice.paid'] })).json()
        .data;
      // dated well before this run, so a change that left updated_at alone is told from one made now
      const longAgo = '2020-01-01T00:00:00.000Z';
      await api.platform.db.query('UPDATE webhook_endpoints SET updated_at = $2 WHERE id = $1', [
        created.id,
        longAgo,
      ]);
      const response = await api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${created.id}`,
        key: org.apiKey,
        payload: { description: 'stamped' },
      });
      expect(response.statusCode).toBe(200);
      expect(Date.parse(response.json().data.updated_at)).toBeGreaterThanOrEqual(
        Date.parse(created.created_at),
      );
    });

    it('validates what it changes like creation does', async () => {
      const path = `/webhook-endpoints/${ownEndpointId}`;
      const patch = (payload: object) => api.request({ method: 'PATCH', path, key: org.apiKey, payload });
      expectValidationError(await patch({ url: 'http://hooks.example.com/' }), 'url');
      expectValidationError(await patch({ url: 'https://10.1.2.3/' }), 'url');
      expectValidationError(await patch({ events: [] }), 'events');
      expectValidationError(await patch({ events: ['invoice.paid', 'nope.*'] }), 'events.1');
      expectValidationError(await patch({ status: 'PAUSED' }), 'status');
      expectValidationError(await patch({ description: null }), 'description');
      expectValidationError(await patch({ description: '\u0000' }), 'description');
      expectValidationError(await patch({ url: 'https://h.example.com/a\u0000b' }), 'url');
      expectValidationError(await patch({ secret: 'x' }), 'secret');
      const read = await api.request({ path, key: org.apiKey });
      expect(read.json().data.events).toEqual(['invoice.*']);
    });
  });

  describe('DELETE /webhook-endpoints/{endpoint_id}', () => {
    it('answers 204 with no body; the endpoint is then gone from every read', async () => {
      const created = (await create({ url: 'https://h.example.com/del', events: ['invoice.paid'] })).json()
        .data;
      const removal = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${created.id}`,
        key: org.apiKey,
      });
      expect(removal.statusCode).toBe(204);
      expect(removal.body).toBe('');
      expect(removal.headers['x-request-id']).toBeTruthy();
      expect(removal.headers['x-ratelimit-remaining']).toBeTruthy();

      const read = await api.request({ path: `/webhook-endpoints/${created.id}`, key: org.apiKey });
      expect(read.statusCode).toBe(404);
      expect(read.json().error_code).toBe('NOT_FOUND');
      const list = await api.request({ path: '/webhook-endpoints?limit=100', key: org.apiKey });
      expect(list.json().data.map((e: { id: string }) => e.id)).not.toContain(created.id);
      const patch = await api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${created.id}`,
        key: org.apiKey,
        payload: { status: 'ACTIVE' },
      });
      expect(patch.statusCode).toBe(404);
      const again = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${created.id}`,
        key: org.apiKey,
      });
      expect(again.statusCode).toBe(404);
    });

    it("answers 404 for another organization's endpoint and leaves it alone; 401 without a key", async () => {
      const foreign = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${foreignEndpointId}`,
        key: org.apiKey,
      });
      expect(foreign.statusCode).toBe(404);
      const missing = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${MISSING_ID}`,
        key: org.apiKey,
      });
      expect(missing.statusCode).toBe(404);
      expect(foreign.json().detail.replace(foreignEndpointId, '<id>')).toBe(
        missing.json().detail.replace(MISSING_ID, '<id>'),
      );
      const anonymous = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${foreignEndpointId}`,
      });
      expect(anonymous.statusCode).toBe(401);
      const stillThere = await api.request({
        path: `/webhook-endpoints/${foreignEndpointId}`,
        key: other.apiKey,
      });
      expect(stillThere.statusCode).toBe(200);
    });
  });

  describe('pending deliveries of an endpoint taken out of service', () => {
    it('end FAILED, saying why, when it is disabled or deleted before their first attempt', async () => {
      // no dispatcher runs in this file: fanned-out events stay PENDING until the endpoint changes
      const owner = await createTestOrg(api.platform.db);
      const make = async (path: string) =>
        (
          await create({ url: `https://hooks.example.com/${path}`, events: ['invoice.*'] }, owner.apiKey)
        ).json().data.id as string;
      const disabled = await make('disabled');
      const deleted = await make('deleted');
      const kept = await make('kept');
      await emit(api.platform.db, owner.orgId, 'invoice.posted');
      await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
      for (const id of [disabled, deleted, kept]) {
        expect((await storedEvents(api.platform.db, id)).map((e) => e.status)).toEqual(['PENDING']);
      }
      const patch = await api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${disabled}`,
        key: owner.apiKey,
        payload: { status: 'DISABLED' },
      });
      expect(patch.statusCode).toBe(200);
      const removal = await api.request({
        method: 'DELETE',
        path: `/webhook-endpoints/${deleted}`,
        key: owner.apiKey,
      });
      expect(removal.statusCode).toBe(204);
      for (const [id, why] of [
        [disabled, 'Not delivered: the endpoint was disabled.'],
        [deleted, 'Not delivered: the endpoint was deleted.'],
      ] as const) {
        const events = await api.request({ path: `/webhook-events?endpoint_id=${id}`, key: owner.apiKey });
        expect(events.json().data, why).toEqual([
          expect.objectContaining({
            status: 'FAILED',
            attempts: 0,
            last_response_body: why,
            next_attempt_at: null,
          }),
        ]);
      }
      expect((await storedEvents(api.platform.db, kept)).map((e) => e.status)).toEqual(['PENDING']);
    });

    it('leave delivered events as they were, and end nothing when the endpoint stays in service', async () => {
      const owner = await createTestOrg(api.platform.db);
      const id = (
        await create({ url: 'https://hooks.example.com/history', events: ['invoice.*'] }, owner.apiKey)
      ).json().data.id as string;
      await emit(api.platform.db, owner.orgId, 'invoice.posted');
      await emit(api.platform.db, owner.orgId, 'invoice.paid');
      await fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 5 });
      const [delivered, pending] = await storedEvents(api.platform.db, id);
      // the first was delivered, as a dispatcher records it
      await api.platform.db.query(
        `UPDATE webhook_events SET status = 'SUCCESS', attempts = 1, next_attempt_at = NULL,
           last_response_code = 200, last_response_body = 'ok' WHERE id = $1`,
        [delivered!.id],
      );
      const patch = (payload: object) =>
        api.request({ method: 'PATCH', path: `/webhook-endpoints/${id}`, key: owner.apiKey, payload });
      for (const payload of [{ status: 'ACTIVE' }, { description: 'renamed' }]) {
        expect((await patch(payload)).statusCode, JSON.stringify(payload)).toBe(200);
      }
      expect((await storedEvents(api.platform.db, id)).map((e) => e.status)).toEqual(['SUCCESS', 'PENDING']);

      expect((await patch({ status: 'DISABLED' })).statusCode).toBe(200);
      expect(await storedEvents(api.platform.db, id)).toEqual([
        expect.objectContaining({
          id: delivered!.id,
          status: 'SUCCESS',
          last_response_code: 200,
          last_response_body: 'ok',
        }),
        expect.objectContaining({
          id: pending!.id,
          status: 'FAILED',
          last_response_body: 'Not delivered: the endpoint was disabled.',
        }),
      ]);
    });
  });

  describe('a previous secret whose overlap ended', () => {
    it('is shown as none from the instant it expires, before the dispatcher forgets it', async () => {
      const created = (
        await create({ url: 'https://hooks.example.com/rotated', events: ['invoice.*'] })
      ).json().data;
      const rotation = await api.request({
        method: 'POST',
        path: `/webhook-endpoints/${created.id}/rotate-secret`,
        key: org.apiKey,
        payload: { expire_previous_in: 3600 },
      });
      expect(rotation.statusCode).toBe(200);
      const expire = (at: string, db: { query: typeof api.platform.db.query } = api.platform.db) =>
        db.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = ${at} WHERE id = $1`, [
          created.id,
        ]);

      await expire(`now() - interval '1 second'`);
      const read = await api.request({ path: `/webhook-endpoints/${created.id}`, key: org.apiKey });
      expect(read.json().data).toMatchObject({
        secret_key_id: rotation.json().data.secret_key_id,
        previous_secret_key_id: null,
        previous_secret_expires_at: null,
      });
      // still stored: no dispatcher has swept it
      const stored = await api.platform.db.query<{ previous_secret: string | null }>(
        'SELECT previous_secret FROM webhook_endpoints WHERE id = $1',
        [created.id],
      );
      expect(stored.rows[0]!.previous_secret).toBe(created.secret);

      // within one transaction now() stands still: expiring at now() is expired, a moment later is not
      await api.platform.db.transaction(async (tx) => {
        await expire('now()', tx);
        expect(await getEndpoint(tx, org.orgId, created.id)).toMatchObject({
          previous_secret_key_id: null,
          previous_secret_expires_at: null,
        });
        await expire(`now() + interval '1 millisecond'`, tx);
        expect(await getEndpoint(tx, org.orgId, created.id)).toMatchObject({
          previous_secret_key_id: created.secret_key_id,
          previous_secret_expires_at: expect.any(String),
        });
      });
    });
  });

  it('documents every operation in the OpenAPI export', async () => {
    const response = await api.request({ path: '/openapi.json', key: org.apiKey });
    const { paths } = response.json();
    expect(Object.keys(paths['/webhook-endpoints']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(paths['/webhook-endpoints/{endpoint_id}']).sort()).toEqual(['delete', 'get', 'patch']);
    expect(paths['/webhook-endpoints'].post.responses).toHaveProperty('201');
    expect(paths['/webhook-endpoints/{endpoint_id}'].delete.responses).toHaveProperty('204');
    expect(paths['/webhook-events']).toHaveProperty('get');
    expect(paths['/webhook-events/{event_id}']).toHaveProperty('get');
    expect(paths['/webhook-events/{event_id}/retry'].post.responses).toHaveProperty('202');
    expect(paths['/webhook-events/{event_id}/retry'].post.responses).toHaveProperty('409');
  });
});
