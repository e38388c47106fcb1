import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import {
  createUsageItems,
  eventually,
  freshKey,
  MODES,
  startUsageStack,
  type UsageFrontEnd,
  type UsageItems,
  type UsageStack,
  usageRows,
} from './support.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const BODY_LIMIT = 256 * 1024;

/**
 * Every rule of the spec's "Usage events" section and docs/architecture.md, "Rules of the contract", each its own test, on both front
 * ends (the uWS ingest service over HTTP, the api service through inject) and in both modes
 * (Redis + Kafka, and the in-process twins).
 */
describe.each(MODES)('usage events, %s', (mode) => {
  let stack: UsageStack;
  let org: TestOrg;
  let items: UsageItems;
  let otherOrgItems: UsageItems;

  beforeAll(async () => {
    stack = await startUsageStack(mode, {
      sinks: true,
      env: { BODY_LIMIT_BYTES: String(BODY_LIMIT), INGEST_BODY_LIMIT_BYTES: String(BODY_LIMIT) },
    });
    const db = stack.api.platform.db;
    org = await createTestOrg(db);
    items = await createUsageItems(db, org.orgId);
    const other = await createTestOrg(db);
    otherOrgItems = await createUsageItems(db, other.orgId);
  });
  afterAll(() => stack?.close());

  /** Rows in Postgres for this org and key, once the sinks caught up (at once in-process). */
  const storedWithKey = (key: string) =>
    usageRows(stack.api.platform.db, org.orgId).then((rows) =>
      rows.filter((row) => row.idempotency_key === key),
    );

  describe.each(['uws', 'node', 'api'] as const)('through %s', (name) => {
    const frontEnd = (): UsageFrontEnd => stack.frontEnds.find((f) => f.name === name)!;
    const post = (request: Parameters<UsageFrontEnd['post']>[1]) =>
      frontEnd().post('/usage/events', { key: org.apiKey, ...request });

    it('records an event: 201 with the usage event, rate-limit headers and X-Request-ID', async () => {
      const key = freshKey();
      const before = Date.now();
      const response = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 2.5 },
      });
      expect(response.status).toBe(201);
      const event = response.body.data;
      expect(event).toEqual({
        id: expect.stringMatching(UUID),
        object: 'usage_event',
        subscription_item_id: items.metered,
        quantity: 2.5,
        timestamp: expect.any(String),
        idempotency_key: key,
        recorded_at: expect.any(String),
      });
      // No timestamp sent: the time of receipt.
      expect(event.timestamp).toBe(event.recorded_at);
      expect(Date.parse(event.recorded_at)).toBeGreaterThanOrEqual(before - 5);
      expect(response.headers['x-request-id']).toMatch(UUID);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Number(response.headers['x-ratelimit-limit'])).toBeGreaterThan(0);
      expect(response.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
      expect(response.headers['ratelimit-policy']).toContain('"hourly"');
      await eventually(async () =>
        expect(await storedWithKey(key)).toEqual([
          { id: event.id, subscription_item_id: items.metered, idempotency_key: key, quantity: '2.50000000' },
        ]),
      );
    });

    it('keeps the timestamp the client sent, in UTC', async () => {
      const response = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: items.metered, quantity: 1, timestamp: '2026-11-01T10:00:00.5+02:00' },
      });
      expect(response.status).toBe(201);
      expect(response.body.data.timestamp).toBe('2026-11-01T08:00:00.500Z');
    });

    it('lets the Idempotency-Key header win over the body key', async () => {
      const headerKey = freshKey('header');
      const bodyKey = freshKey('body');
      const first = await post({
        idempotencyKey: headerKey,
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: bodyKey },
      });
      expect(first.status).toBe(201);
      expect(first.body.data.idempotency_key).toBe(headerKey);
      // The body key alone is a fallback: the header key is the one recorded.
      const byBodyKey = await post({
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: headerKey },
      });
      expect(byBodyKey.status).toBe(201);
      expect(byBodyKey.body.data.id).toBe(first.body.data.id);
    });

    it('answers 400 BAD_REQUEST when neither the header nor the body has a key', async () => {
      const response = await post({ body: { subscription_item_id: items.metered, quantity: 1 } });
      expect(response.status).toBe(400);
      expect(response.body).toEqual({
        error_code: 'BAD_REQUEST',
        detail: expect.stringContaining('Idempotency-Key'),
        request_id: response.headers['x-request-id'],
      });
    });

    it('answers 422 for a key over 255 characters, from the header or the body', async () => {
      const long = 'x'.repeat(256);
      const header = await post({
        idempotencyKey: long,
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      expect(header.status).toBe(422);
      expect(header.body.error_code).toBe('VALIDATION_ERROR');
      expect(header.body.details).toEqual([
        expect.objectContaining({ field: 'Idempotency-Key', code: 'too_long' }),
      ]);
      const body = await post({
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: long },
      });
      expect(body.status).toBe(422);
      expect(body.body.details).toEqual([
        expect.objectContaining({ field: 'idempotency_key', code: 'too_long' }),
      ]);
      const exactly255 = await post({
        idempotencyKey: 'y'.repeat(255),
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      expect(exactly255.status).toBe(201);
    });

    it('answers 422 unless quantity is a finite number greater than zero with at most 8 decimals', async () => {
      for (const quantity of [0, -3, '4', null, 1.000000001]) {
        const response = await post({
          idempotencyKey: freshKey(),
          body: { subscription_item_id: items.metered, quantity },
        });
        expect(response.status, JSON.stringify(quantity)).toBe(422);
        expect(response.body.details[0]).toMatchObject({ field: 'quantity' });
      }
      const missing = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: items.metered },
      });
      expect(missing.body.details).toEqual([{ field: 'quantity', message: 'Required.', code: 'required' }]);
      const finest = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: items.metered, quantity: 0.00000001 },
      });
      expect(finest.status).toBe(201);
    });

    it("answers 404 for an unknown item and, identically, for another organization's item", async () => {
      const unknown = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: 987654321, quantity: 1 },
      });
      const foreign = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: otherOrgItems.metered, quantity: 1 },
      });
      for (const response of [unknown, foreign]) {
        expect(response.status).toBe(404);
        expect(response.body.error_code).toBe('NOT_FOUND');
      }
      expect(foreign.body.detail).toBe(
        unknown.body.detail.replace('987654321', String(otherOrgItems.metered)),
      );
    });

    it('answers 400 BAD_REQUEST for an item that is not metered', async () => {
      const response = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: items.licensed, quantity: 1 },
      });
      expect(response.status).toBe(400);
      expect(response.body.error_code).toBe('BAD_REQUEST');
      expect(response.body.detail).toContain('not metered');
    });

    it('answers a repeated key with the stored event and 201, whatever the new body says', async () => {
      const key = freshKey();
      const first = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 7 },
      });
      const again = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 99, timestamp: '2026-01-01T00:00:00Z' },
      });
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body.data).toEqual(first.body.data);
      await eventually(async () =>
        expect((await storedWithKey(key)).map((row) => row.quantity)).toEqual(['7.00000000']),
      );
    });

    it('answers a repeated key with the stored event even when the repeat body is otherwise invalid', async () => {
      const key = freshKey();
      const first = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 3 },
      });
      const invalid = { subscription_item_id: items.metered, quantity: -1, extra: true };
      const again = await post({ idempotencyKey: key, body: invalid });
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body.data).toEqual(first.body.data);
      expect(again.headers['x-ratelimit-remaining']).toBeDefined();
      // A key never recorded: the body's own errors.
      const fresh = await post({ idempotencyKey: freshKey(), body: invalid });
      expect(fresh.status).toBe(422);
      expect(fresh.body.details.map((d: { field: string }) => d.field).sort()).toEqual(['extra', 'quantity']);
    });

    it('answers a repeated header key with the stored event even when the body key is not a string', async () => {
      const key = freshKey();
      const first = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 3 },
      });
      // the header wins over the body key, so the body key's type is one more thing the body says
      const again = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 3, idempotency_key: 5 },
      });
      expect(first.status).toBe(201);
      expect(again.status).toBe(201);
      expect(again.body.data).toEqual(first.body.data);
    });

    it('refuses a quantity written with more digits than a JSON number keeps, and keeps one it can', async () => {
      const sent = (quantity: string) =>
        post({
          idempotencyKey: freshKey(),
          rawBody: `{"subscription_item_id":${items.metered},"quantity":${quantity}}`,
        });
      for (const quantity of ['12345678901234.12345678', '999999999999999.99', '1.00000000000000001']) {
        const response = await sent(quantity);
        expect(response.status, quantity).toBe(422);
        expect(response.body.details, quantity).toEqual([expect.objectContaining({ field: 'quantity' })]);
      }
      for (const [quantity, kept] of [
        ['12345678.12345678', 12345678.12345678],
        ['1.5e-7', 1.5e-7],
        ['25E1', 250],
      ] as const) {
        const response = await sent(quantity);
        expect(response.status, quantity).toBe(201);
        expect(response.body.data.quantity).toBe(kept);
      }
    });

    it('parses a body as the other front end does: a leading BOM is skipped, prototype keys are a 400', async () => {
      const body = `{"subscription_item_id":${items.metered},"quantity":1}`;
      expect((await post({ idempotencyKey: freshKey(), rawBody: `\uFEFF${body}` })).status).toBe(201);
      for (const poisoned of [
        `{"subscription_item_id":${items.metered},"quantity":1,"__proto__":{"a":1}}`,
        `{"subscription_item_id":${items.metered},"quantity":1,"constructor":{"prototype":{"a":1}}}`,
      ]) {
        const response = await post({ idempotencyKey: freshKey(), rawBody: poisoned });
        expect(response.status).toBe(400);
        expect(response.body.detail).toBe('The request body is not valid JSON.');
      }
    });

    it('refuses a body that is not UTF-8 (400): decoded, two different keys would be one event', async () => {
      const key = freshKey();
      const withKeyByte = (byte: number) =>
        Buffer.concat([
          Buffer.from(`{"subscription_item_id":${items.metered},"quantity":1,"idempotency_key":"${key}`),
          Buffer.from([byte]),
          Buffer.from('"}'),
        ]);
      for (const byte of [0xff, 0xfe]) {
        const response = await post({ rawBody: withKeyByte(byte) });
        expect(response.status).toBe(400);
        expect(response.body).toMatchObject({
          error_code: 'BAD_REQUEST',
          detail: 'The request body is not valid UTF-8.',
        });
        expect(response.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
      }
      const batch = await frontEnd().post('/usage/events/batch', {
        key: org.apiKey,
        rawBody: Buffer.concat([Buffer.from('{"events":['), withKeyByte(0xff), Buffer.from(']}')]),
      });
      expect(batch.status).toBe(400);
      expect(batch.body.detail).toBe('The request body is not valid UTF-8.');
      expect(await storedWithKey(`${key}\uFFFD`)).toEqual([]);
    });

    it('answers 415 for a compressed body, which it never decompresses, counted like every refusal', async () => {
      const body = JSON.stringify({ subscription_item_id: items.metered, quantity: 1 });
      for (const rawBody of [gzipSync(body), Buffer.from(body)]) {
        const response = await post({
          idempotencyKey: freshKey(),
          rawBody,
          headers: { 'content-encoding': 'gzip' },
        });
        expect(response.status).toBe(415);
        expect(response.body).toMatchObject({
          error_code: 'UNSUPPORTED_MEDIA_TYPE',
          detail: 'Content-Encoding gzip is not supported; send the body uncompressed.',
        });
        expect(response.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
      }
      const identity = await post({
        idempotencyKey: freshKey(),
        rawBody: body,
        headers: { 'content-encoding': 'identity' },
      });
      expect(identity.status).toBe(201);
    });

    it('takes application/json only, and says so before it says a body is too large', async () => {
      const body = `{"subscription_item_id":${items.metered},"quantity":1}`;
      const vendor = await post({
        idempotencyKey: freshKey(),
        rawBody: body,
        contentType: 'application/vnd.api+json',
      });
      expect(vendor.status).toBe(415);
      const hugeText = await post({
        idempotencyKey: freshKey(),
        rawBody: 'x'.repeat(BODY_LIMIT + 1),
        contentType: 'text/plain',
      });
      expect(hugeText.status).toBe(415);
      const charset = await post({
        idempotencyKey: freshKey(),
        rawBody: body,
        contentType: 'application/json; charset=utf-8',
      });
      expect(charset.status).toBe(201);
      const spaced = await post({
        idempotencyKey: freshKey(),
        rawBody: body,
        contentType: 'application/json ; charset=utf-8',
      });
      expect(spaced.status).toBe(201);
    });

    it('answers 415 for another media type even when the body is empty, as Fastify decides', async () => {
      for (const contentType of ['text/plain', 'application/x-www-form-urlencoded']) {
        const response = await post({ idempotencyKey: freshKey(), rawBody: '', contentType });
        expect(response.status, contentType).toBe(415);
        expect(response.body.error_code, contentType).toBe('UNSUPPORTED_MEDIA_TYPE');
        expect(response.headers['x-ratelimit-remaining'], contentType).toMatch(/^\d+$/);
      }
    });

    it('answers 415 for a chunked request without a Content-Type, even an empty one, as Fastify decides', async () => {
      const key = freshKey();
      const headers = { authorization: `Bearer ${org.apiKey}`, 'idempotency-key': key };
      const status =
        name === 'api'
          ? (
              await stack.api.app.inject({
                method: 'POST',
                url: `${BASE_PATH}/usage/events`,
                headers: { ...headers, 'transfer-encoding': 'chunked' },
              })
            ).statusCode
          : await emptyChunkedPost(name === 'uws' ? stack.ingest.port : stack.nodeIngest.port, headers);
      expect(status).toBe(415);
      expect(await storedWithKey(key)).toEqual([]);
    });

    it('answers a request without a body with one 422 on the body', async () => {
      const response = await post({ idempotencyKey: freshKey() });
      expect(response.status).toBe(422);
      expect(response.body.details).toEqual([
        { field: '(body)', message: 'Must be an object.', code: 'invalid_type' },
      ]);
    });

    it('counts a key in characters, as Postgres does: 255 emoji are a valid key, 256 are not', async () => {
      const key = `${freshKey()}-`;
      const emoji = (count: number) => key + '😀'.repeat(count - [...key].length);
      const fits = await post({
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: emoji(255) },
      });
      expect(fits.status).toBe(201);
      expect(fits.body.data.idempotency_key).toBe(emoji(255));
      const over = await post({
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: emoji(256) },
      });
      expect(over.status).toBe(422);
    });

    it('reports each wrong field once', async () => {
      const response = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: 1e20, quantity: 1 },
      });
      expect(response.status).toBe(422);
      expect(response.body.details).toHaveLength(1);
    });

    it('takes the first of repeated Idempotency-Key headers, as the other front end does', async () => {
      const [first, second] = [freshKey(), freshKey()];
      const response = await post({
        body: { subscription_item_id: items.metered, quantity: 1 },
        repeatedHeader: { name: 'idempotency-key', values: [first, second] },
      });
      expect(response.status).toBe(201);
      expect(response.body.data.idempotency_key).toBe(first);
    });

    it('scopes a key to its subscription item', async () => {
      const key = freshKey();
      const one = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      const other = await post({
        idempotencyKey: key,
        body: { subscription_item_id: items.otherMetered, quantity: 2 },
      });
      expect(one.status).toBe(201);
      expect(other.status).toBe(201);
      expect(other.body.data.id).not.toBe(one.body.data.id);
      await eventually(async () => expect(await storedWithKey(key)).toHaveLength(2));
    });

    it('creates ONE event for 50 concurrent requests with one key: 50 identical ids', async () => {
      const key = freshKey('concurrent');
      const responses = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          post({ idempotencyKey: key, body: { subscription_item_id: items.metered, quantity: i + 1 } }),
        ),
      );
      expect(responses.map((r) => r.status)).toEqual(new Array(50).fill(201));
      const ids = new Set(responses.map((r) => r.body.data.id));
      expect(ids.size).toBe(1);
      const quantities = new Set(responses.map((r) => r.body.data.quantity));
      expect(quantities.size).toBe(1);
      await eventually(async () => expect((await storedWithKey(key)).map((row) => row.id)).toEqual([...ids]));
    });

    it('keeps a caller UUID as X-Request-ID and names it in error bodies', async () => {
      const requestId = crypto.randomUUID();
      const response = await post({
        headers: { 'x-request-id': requestId },
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      expect(response.status).toBe(400);
      expect(response.headers['x-request-id']).toBe(requestId);
      expect(response.body.request_id).toBe(requestId);
    });

    it('answers 401 without a valid key, without rate-limit headers', async () => {
      const response = await frontEnd().post('/usage/events', {
        idempotencyKey: freshKey(),
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      expect(response.status).toBe(401);
      expect(response.body.error_code).toBe('UNAUTHORIZED');
      expect(response.headers['www-authenticate']).toBe('Bearer');
      expect(response.headers['x-ratelimit-limit']).toBeUndefined();
      expect(response.headers['x-request-id']).toMatch(UUID);
    });

    it('answers on the path with a trailing slash or a query string too', async () => {
      for (const path of ['/usage/events/', '/usage/events?via=query'] as const) {
        const key = freshKey();
        const response = await frontEnd().post(path, {
          key: org.apiKey,
          idempotencyKey: key,
          body: { subscription_item_id: items.metered, quantity: 1 },
        });
        expect(response.status, path).toBe(201);
        expect(response.body.data.idempotency_key).toBe(key);
      }
    });

    it('refuses a header key that is not ASCII rather than store it as the server decoded it', async () => {
      // "é" sent as UTF-8 bytes: Node reads them as Latin-1 ("Ã©"), uWS does not read them at all
      const response = await post({
        idempotencyKey: '\u00c3\u00a9',
        body: { subscription_item_id: items.metered, quantity: 1 },
      });
      if (name !== 'uws') {
        expect(response.status).toBe(422);
        expect(response.body.details).toEqual([expect.objectContaining({ field: 'Idempotency-Key' })]);
      } else {
        // uWS never sees the bytes; it serves only behind a proxy that sends such keys to the api
        expect(response.status).toBe(400);
        expect(response.body.detail).toMatch(/idempotency key is required/i);
      }
      expect(await storedWithKey('\u00c3\u00a9')).toEqual([]);
      // the same key in the body is kept exactly
      const key = `é-${freshKey()}`;
      const inBody = await post({
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: key },
      });
      expect(inBody.status).toBe(201);
      expect(inBody.body.data.idempotency_key).toBe(key);
    });

    it('answers 400 for malformed JSON, 415 for another media type and 413 beyond the body limit', async () => {
      const malformed = await post({ idempotencyKey: freshKey(), rawBody: '{"subscription_item_id": ' });
      expect(malformed.status).toBe(400);
      expect(malformed.body.error_code).toBe('BAD_REQUEST');
      const text = await post({
        idempotencyKey: freshKey(),
        rawBody: 'quantity=1',
        contentType: 'text/plain',
      });
      expect(text.status).toBe(415);
      expect(text.body.error_code).toBe('UNSUPPORTED_MEDIA_TYPE');
      const huge = await post({
        idempotencyKey: freshKey(),
        body: { subscription_item_id: items.metered, quantity: 1, idempotency_key: 'z'.repeat(BODY_LIMIT) },
      });
      expect(huge.status).toBe(413);
      expect(huge.body.error_code).toBe('PAYLOAD_TOO_LARGE');
    });

    it('reads a body of exactly the limit and answers 413 from one byte over it', async () => {
      const event = `{"subscription_item_id":${items.metered},"quantity":1}`;
      const padded = (bytes: number) => event + ' '.repeat(bytes - event.length);
      const fits = await post({ idempotencyKey: freshKey(), rawBody: padded(BODY_LIMIT) });
      expect(fits.status).toBe(201);
      expect(fits.body.data.quantity).toBe(1);
      const over = await post({ idempotencyKey: freshKey(), rawBody: padded(BODY_LIMIT + 1) });
      expect(over.status).toBe(413);
      expect(over.body.error_code).toBe('PAYLOAD_TOO_LARGE');
      expect(over.headers['x-ratelimit-remaining']).toMatch(/^\d+$/);
    });

    it('answers 415 for a body without a Content-Type, whatever its size, as Fastify decides', async () => {
      const event = `{"subscription_item_id":${items.metered},"quantity":1}`;
      for (const rawBody of [Buffer.from(event), Buffer.from(event + ' '.repeat(BODY_LIMIT))]) {
        const key = freshKey();
        const response = await post({ idempotencyKey: key, rawBody, contentType: null });
        expect(response.status, `${rawBody.length} bytes`).toBe(415);
        expect(response.body.error_code).toBe('UNSUPPORTED_MEDIA_TYPE');
        expect(await storedWithKey(key)).toEqual([]);
      }
      const typed = await post({
        idempotencyKey: freshKey(),
        rawBody: event,
        contentType: 'Application/JSON',
      });
      expect(typed.status).toBe(201);
    });

    it('counts every authenticated request, invalid ones too, and answers 429 with Retry-After over the limit', async () => {
      const limited = await createTestOrg(stack.api.platform.db, { plan: 'beta', requestsPerHour: 3 });
      const limitedItems = await createUsageItems(stack.api.platform.db, limited.orgId);
      const send = (body: unknown) =>
        frontEnd().post('/usage/events', { key: limited.apiKey, idempotencyKey: freshKey(), body });
      const valid = await send({ subscription_item_id: limitedItems.metered, quantity: 1 });
      const invalid = await send({ subscription_item_id: limitedItems.metered, quantity: -1 });
      const missing = await send({ subscription_item_id: 987654321, quantity: 1 });
      expect([valid.status, invalid.status, missing.status]).toEqual([201, 422, 404]);
      expect([valid, invalid, missing].map((r) => r.headers['x-ratelimit-remaining'])).toEqual([
        '2',
        '1',
        '0',
      ]);
      const refused = await send({ subscription_item_id: limitedItems.metered, quantity: 1 });
      expect(refused.status).toBe(429);
      expect(refused.body.error_code).toBe('RATE_LIMITED');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
      expect(refused.headers['x-ratelimit-remaining']).toBe('0');
    });

    it('counts a request refused before its events were read (malformed JSON) too', async () => {
      const limited = await createTestOrg(stack.api.platform.db, { plan: 'beta', requestsPerHour: 2 });
      const limitedItems = await createUsageItems(stack.api.platform.db, limited.orgId);
      const malformed = await frontEnd().post('/usage/events', {
        key: limited.apiKey,
        idempotencyKey: freshKey(),
        rawBody: '{"quantity": 1',
      });
      expect(malformed.status).toBe(400);
      expect(malformed.headers['x-ratelimit-remaining']).toBe('1');
      const valid = await frontEnd().post('/usage/events', {
        key: limited.apiKey,
        idempotencyKey: freshKey(),
        body: { subscription_item_id: limitedItems.metered, quantity: 1 },
      });
      expect(valid.headers['x-ratelimit-remaining']).toBe('0');
      const over = await frontEnd().post('/usage/events', {
        key: limited.apiKey,
        idempotencyKey: freshKey(),
        body: { subscription_item_id: limitedItems.metered, quantity: 1 },
      });
      expect(over.status).toBe(429);
      // Over the limit, a malformed request is refused for the limit, as on every other route.
      const malformedOver = await frontEnd().post('/usage/events', {
        key: limited.apiKey,
        idempotencyKey: freshKey(),
        rawBody: '{"quantity": 1',
      });
      expect(malformedOver.status).toBe(429);
      expect(malformedOver.body.error_code).toBe('RATE_LIMITED');
      expect(Number(malformedOver.headers['retry-after'])).toBeGreaterThan(0);
    });

    describe('batch', () => {
      const batch = (events: unknown[], key = org.apiKey) =>
        frontEnd().post('/usage/events/batch', { key, body: { events } });

      it('answers per event, in request order, with the status each alone would have got', async () => {
        const keys = [freshKey('b'), freshKey('b'), freshKey('b'), freshKey('b')];
        const response = await batch([
          { subscription_item_id: items.metered, quantity: 1.25, idempotency_key: keys[0] },
          { subscription_item_id: items.metered, quantity: -1, idempotency_key: keys[1] },
          { subscription_item_id: items.licensed, quantity: 1, idempotency_key: keys[2] },
          { subscription_item_id: 987654321, quantity: 1, idempotency_key: keys[3] },
          { subscription_item_id: items.metered, quantity: 1 },
          { subscription_item_id: items.otherMetered, quantity: 3, idempotency_key: keys[0] },
        ]);
        expect(response.status).toBe(200);
        const results = response.body.data;
        expect(results.map((r: { status: number }) => r.status)).toEqual([201, 422, 400, 404, 400, 201]);
        expect(results[0].data).toMatchObject({
          object: 'usage_event',
          quantity: 1.25,
          idempotency_key: keys[0],
        });
        expect(results[1].error).toMatchObject({
          error_code: 'VALIDATION_ERROR',
          details: [expect.objectContaining({ field: 'quantity' })],
          request_id: response.headers['x-request-id'],
        });
        expect(results[2].error.error_code).toBe('BAD_REQUEST');
        expect(results[3].error.error_code).toBe('NOT_FOUND');
        expect(results[4].error.error_code).toBe('BAD_REQUEST');
        expect(results[5].data.subscription_item_id).toBe(items.otherMetered);
        await eventually(async () => expect(await storedWithKey(keys[0]!)).toHaveLength(2));
      });

      it('records a full batch of 1000 events and answers each, in order', async () => {
        const keys = Array.from({ length: 1000 }, () => freshKey('full'));
        const response = await batch(
          keys.map((key) => ({ subscription_item_id: items.metered, quantity: 0.5, idempotency_key: key })),
        );
        expect(response.status).toBe(200);
        const results = response.body.data as { status: number; data: { idempotency_key: string } }[];
        expect(results.map((r) => r.status)).toEqual(keys.map(() => 201));
        expect(results.map((r) => r.data.idempotency_key)).toEqual(keys);
      });

      it('returns stored events for keys seen before or repeated inside the batch', async () => {
        const key = freshKey('dup');
        const single = await post({
          idempotencyKey: key,
          body: { subscription_item_id: items.metered, quantity: 5 },
        });
        const inside = freshKey('inside');
        const response = await batch([
          { subscription_item_id: items.metered, quantity: 6, idempotency_key: key },
          { subscription_item_id: items.metered, quantity: 1, idempotency_key: inside },
          { subscription_item_id: items.metered, quantity: 2, idempotency_key: inside },
        ]);
        const [seen, first, repeat] = response.body.data;
        expect(seen.data).toEqual(single.body.data);
        expect(repeat.data).toEqual(first.data);
        expect(first.data.quantity).toBe(1);
        await eventually(async () => expect(await storedWithKey(inside)).toHaveLength(1));
      });

      it('counts the whole batch as ONE request against the hourly limit', async () => {
        const limited = await createTestOrg(stack.api.platform.db, { plan: 'beta', requestsPerHour: 2 });
        const limitedItems = await createUsageItems(stack.api.platform.db, limited.orgId);
        const events = Array.from({ length: 300 }, (_, i) => ({
          subscription_item_id: limitedItems.metered,
          quantity: 1,
          idempotency_key: `bulk-${i}`,
        }));
        const first = await batch(events, limited.apiKey);
        expect(first.status).toBe(200);
        expect(first.body.data.every((r: { status: number }) => r.status === 201)).toBe(true);
        expect(first.headers['x-ratelimit-remaining']).toBe('1');
        const second = await batch(events, limited.apiKey);
        expect(second.headers['x-ratelimit-remaining']).toBe('0');
        expect(second.body.data.map((r: { data: { id: string } }) => r.data.id)).toEqual(
          first.body.data.map((r: { data: { id: string } }) => r.data.id),
        );
        expect((await batch(events, limited.apiKey)).status).toBe(429);
      });

      it('counts a batch none of whose events is valid as ONE request too, over the limit a 429', async () => {
        const limited = await createTestOrg(stack.api.platform.db, { plan: 'beta', requestsPerHour: 2 });
        const limitedItems = await createUsageItems(stack.api.platform.db, limited.orgId);
        const events = [
          { subscription_item_id: limitedItems.metered, quantity: -1, idempotency_key: freshKey() },
          { subscription_item_id: 987654321, quantity: 1, idempotency_key: freshKey() },
        ];
        const first = await batch(events, limited.apiKey);
        expect(first.status).toBe(200);
        expect(first.body.data.map((r: { status: number }) => r.status)).toEqual([422, 404]);
        expect(first.headers['x-ratelimit-remaining']).toBe('1');
        expect((await batch(events, limited.apiKey)).headers['x-ratelimit-remaining']).toBe('0');
        const over = await batch(events, limited.apiKey);
        expect(over.status).toBe(429);
        expect(over.body.error_code).toBe('RATE_LIMITED');
      });

      it('refuses an empty batch or one over 1000 events as a whole (422)', async () => {
        const empty = await batch([]);
        expect(empty.status).toBe(422);
        expect(empty.body.details[0]).toMatchObject({ field: 'events' });
        const tooMany = await batch(
          Array.from({ length: 1001 }, (_, i) => ({
            subscription_item_id: items.metered,
            quantity: 1,
            idempotency_key: `t${i}`,
          })),
        );
        expect(tooMany.status).toBe(422);
        expect(tooMany.body.details[0]).toMatchObject({ field: 'events', code: 'too_long' });
      });
    });
  });
});

/** A POST with `Transfer-Encoding: chunked`, no Content-Type and no body, written by hand (fetch sends neither); its status. */
async function emptyChunkedPost(port: number, headers: Record<string, string>): Promise<number> {
  const lines = [
    `POST ${BASE_PATH}/usage/events HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    'Transfer-Encoding: chunked',
    'Connection: close',
  ];
  const socket = net.connect(port, '127.0.0.1');
  socket.write(`${lines.join('\r\n')}\r\n\r\n0\r\n\r\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return Number(Buffer.concat(chunks).toString('latin1').split(' ', 2)[1]);
}
