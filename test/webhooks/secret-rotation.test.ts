import { verify as verifyServiceSignature } from '@octokit/webhooks-methods';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetExpiredSecrets } from '../../libs/webhooks/endpoints.js';
import { signingKeyId, type WebhookDispatcher } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import {
  emit,
  eventually,
  type ReceivedDelivery,
  type Receiver,
  registerEndpoint,
  standardSignatures,
  standardVerifies,
  startDispatcher,
  startReceiver,
  storedEvents,
} from './support.js';

const MISSING_ID = '6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11';

/**
 * POST /webhook-endpoints/{id}/rotate-secret: the new secret signs at once; the previous one
 * also signs webhook-signature until its overlap ends on the dispatcher's clock (injected here and
 * moved forward), and is then forgotten.
 */
describe('webhook secret rotation', () => {
  let api: TestApi;
  let dispatcher: WebhookDispatcher;
  let target: Receiver;
  /** How far the dispatcher's clock is ahead of the real one. */
  let clockAheadMs = 0;

  beforeAll(async () => {
    api = await startTestApi();
    target = await startReceiver();
    dispatcher = startDispatcher(api.platform.db, { now: () => new Date(Date.now() + clockAheadMs) });
  });
  afterAll(async () => {
    await dispatcher?.stop();
    await target?.close();
    await api?.close();
  });

  interface Endpoint {
    id: string;
    secret: string;
    secret_key_id: string;
    previous_secret_key_id: string | null;
    previous_secret_expires_at: string | null;
    status: string;
    updated_at: string;
  }

  async function createEndpoint(org: TestOrg, extra: Record<string, unknown> = {}): Promise<Endpoint> {
    const created = await registerEndpoint(api, org.apiKey, {
      url: `${target.url}?org=${org.orgId}`,
      events: ['invoice.*'],
      ...extra,
    });
    return created as Endpoint;
  }

  function rotate(org: TestOrg, endpointId: string, payload?: unknown) {
    return api.request({
      method: 'POST',
      path: `/webhook-endpoints/${endpointId}/rotate-secret`,
      key: org.apiKey,
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
  }

  async function rotated(org: TestOrg, endpointId: string, payload?: unknown): Promise<Endpoint> {
    const response = await rotate(org, endpointId, payload);
    expect(response.statusCode, response.body).toBe(200);
    return response.json().data;
  }

  /** Emits one event to the org's endpoint and returns its delivery once received. */
  async function deliverOne(org: TestOrg): Promise<ReceivedDelivery> {
    const mine = () => target.deliveries.filter((d) => d.url === `/hooks?org=${org.orgId}`);
    const before = mine().length;
    await emit(api.platform.db, org.orgId, 'invoice.paid');
    await eventually(
      async () => mine().length,
      (count) => count > before,
    );
    return mine().at(-1)!;
  }

  async function storedSecrets(endpointId: string) {
    const { rows } = await api.platform.db.query<{
      secret: string;
      previous_secret: string | null;
      previous_secret_expires_at: Date | null;
    }>('SELECT secret, previous_secret, previous_secret_expires_at FROM webhook_endpoints WHERE id = $1', [
      endpointId,
    ]);
    return rows[0]!;
  }

  it('answers 200 with a new secret shown once; both secrets sign webhook-signature during the overlap', async () => {
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org);
    const before = Date.now();
    const after = await rotated(org, created.id, { expire_previous_in: 3600 });
    expect(after).toMatchObject({
      id: created.id,
      object: 'webhook_endpoint',
      status: 'ACTIVE',
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      secret_key_id: signingKeyId(after.secret),
      previous_secret_key_id: created.secret_key_id,
    });
    expect(after.secret).not.toBe(created.secret);
    // a new secret is a change of the endpoint: updated_at moves, as for a PATCH
    expect(Date.parse(after.updated_at)).toBeGreaterThanOrEqual(before);
    const expires = Date.parse(after.previous_secret_expires_at!);
    expect(expires - before).toBeGreaterThan(3590_000);
    expect(expires - before).toBeLessThan(3610_000);

    // never shown again, nor the previous one, on any read
    const reads = [
      await api.request({ path: `/webhook-endpoints/${created.id}`, key: org.apiKey }),
      await api.request({ path: '/webhook-endpoints', key: org.apiKey }),
    ];
    for (const read of reads) {
      expect(read.body).not.toContain(after.secret);
      expect(read.body).not.toContain(created.secret);
      expect(read.body).not.toContain('whsec_');
    }
    expect(reads[0]!.json().data).toMatchObject({
      secret_key_id: after.secret_key_id,
      previous_secret_key_id: created.secret_key_id,
      previous_secret_expires_at: after.previous_secret_expires_at,
    });

    const delivery = await deliverOne(org);
    expect(standardSignatures(delivery)).toHaveLength(2);
    // a receiver still on the old secret verifies the standard header; one on the new, both headers
    expect(standardVerifies(created.secret, delivery)).toBe(true);
    expect(standardVerifies(after.secret, delivery)).toBe(true);
    const serviceSignature = delivery.headers['x-service-signature'] as string;
    expect(await verifyServiceSignature(after.secret, delivery.body, serviceSignature)).toBe(true);
    expect(await verifyServiceSignature(created.secret, delivery.body, serviceSignature)).toBe(false);

    const [event] = await eventually(
      () => storedEvents(api.platform.db, created.id),
      (rows) => rows[0]?.status === 'SUCCESS',
    );
    const history = (await api.request({ path: `/webhook-events/${event!.id}`, key: org.apiKey })).json().data
      .attempt_history;
    expect(history[0].signatures).toEqual({
      x_service_signature: after.secret_key_id,
      webhook_signature: [after.secret_key_id, created.secret_key_id],
    });
  });

  it('stops signing with the previous secret when the overlap ends, then forgets it', async () => {
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org);
    const after = await rotated(org, created.id, { expire_previous_in: 60 });
    expect(standardSignatures(await deliverOne(org))).toHaveLength(2);
    expect((await storedSecrets(created.id)).previous_secret).toBe(created.secret);

    // 61 s later on the dispatcher's clock: still inside the package's 5-minute window
    clockAheadMs = 61_000;
    try {
      const late = await deliverOne(org);
      expect(standardSignatures(late)).toHaveLength(1);
      expect(standardVerifies(after.secret, late)).toBe(true);
      expect(standardVerifies(created.secret, late)).toBe(false);
      // forgotten by the dispatcher's sweep: nothing of it is left in the database
      const stored = await eventually(
        () => storedSecrets(created.id),
        (row) => row.previous_secret === null,
      );
      expect(stored).toEqual({
        secret: after.secret,
        previous_secret: null,
        previous_secret_expires_at: null,
      });
    } finally {
      clockAheadMs = 0;
    }
    const read = (await api.request({ path: `/webhook-endpoints/${created.id}`, key: org.apiKey })).json()
      .data;
    expect(read).toMatchObject({ previous_secret_key_id: null, previous_secret_expires_at: null });
  });

  it('forgets the previous secret at exactly the instant its overlap ends, not before', async () => {
    // docs/decisions.md: it signs while previous_secret_expires_at is ahead of the dispatcher's clock
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org);
    await rotated(org, created.id, { expire_previous_in: 600 });
    const { rows } = await api.platform.db.query<{ expires_at: Date }>(
      `UPDATE webhook_endpoints SET previous_secret_expires_at = date_trunc('milliseconds', previous_secret_expires_at)
        WHERE id = $1 RETURNING previous_secret_expires_at AS expires_at`,
      [created.id],
    );
    const expiresAt = rows[0]!.expires_at.getTime();
    await forgetExpiredSecrets(api.platform.db, new Date(expiresAt - 1));
    expect((await storedSecrets(created.id)).previous_secret).toBe(created.secret);
    await forgetExpiredSecrets(api.platform.db, new Date(expiresAt));
    expect(await storedSecrets(created.id)).toMatchObject({
      previous_secret: null,
      previous_secret_expires_at: null,
    });
  });

  it('keeps only the latest two secrets valid after two rotations in a row', async () => {
    const org = await createTestOrg(api.platform.db);
    const first = await createEndpoint(org);
    const second = await rotated(org, first.id);
    const third = await rotated(org, first.id);
    expect(third.previous_secret_key_id).toBe(second.secret_key_id);
    const stored = await storedSecrets(first.id);
    expect([stored.secret, stored.previous_secret]).toEqual([third.secret, second.secret]);
    expect(JSON.stringify(stored)).not.toContain(first.secret);

    const delivery = await deliverOne(org);
    expect(standardVerifies(third.secret, delivery)).toBe(true);
    expect(standardVerifies(second.secret, delivery)).toBe(true);
    expect(standardVerifies(first.secret, delivery)).toBe(false);
  });

  it('defaults to a 24-hour overlap, and 0 forgets the previous secret at once', async () => {
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org);
    const before = Date.now();
    // no body at all, and an empty JSON body, take the default
    const byDefault = await rotated(org, created.id);
    const hours = (Date.parse(byDefault.previous_secret_expires_at!) - before) / 3_600_000;
    expect(hours).toBeGreaterThan(23.99);
    expect(hours).toBeLessThan(24.01);
    const emptyBody = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${created.id}/rotate-secret`,
      key: org.apiKey,
      headers: { 'content-type': 'application/json' },
      payload: '',
    });
    expect(emptyBody.statusCode, emptyBody.body).toBe(200);
    const emptyObject = await rotated(org, created.id, {});
    expect(emptyObject.previous_secret_expires_at).not.toBeNull();

    const immediate = await rotated(org, created.id, { expire_previous_in: 0 });
    expect(immediate).toMatchObject({ previous_secret_key_id: null, previous_secret_expires_at: null });
    expect(await storedSecrets(created.id)).toEqual({
      secret: immediate.secret,
      previous_secret: null,
      previous_secret_expires_at: null,
    });
    const delivery = await deliverOne(org);
    expect(standardSignatures(delivery)).toHaveLength(1);
    expect(standardVerifies(immediate.secret, delivery)).toBe(true);
    expect(standardVerifies(emptyObject.secret, delivery)).toBe(false);
  });

  it('works on a DISABLED endpoint, which stays DISABLED until enabled, then signs with the new secret', async () => {
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org, { status: 'DISABLED' });
    const after = await rotated(org, created.id, { expire_previous_in: 0 });
    expect(after.status).toBe('DISABLED');
    expect(Date.parse(after.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.updated_at));
    const enabled = await api.request({
      method: 'PATCH',
      path: `/webhook-endpoints/${created.id}`,
      key: org.apiKey,
      payload: { status: 'ACTIVE' },
    });
    expect(enabled.statusCode).toBe(200);
    const delivery = await deliverOne(org);
    expect(standardVerifies(after.secret, delivery)).toBe(true);
    expect(standardVerifies(created.secret, delivery)).toBe(false);
    expect(
      await verifyServiceSignature(
        after.secret,
        delivery.body,
        delivery.headers['x-service-signature'] as string,
      ),
    ).toBe(true);
  });

  it('loses no delivery while a receiver moves to the new secret during the overlap', async () => {
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org);
    // the receiver answers 2xx only to what verifies with the secrets it holds right now
    const held = [created.secret];
    const own = await startReceiver((delivery) => ({
      status: held.some((secret) => standardVerifies(secret, delivery)) ? 200 : 401,
    }));
    try {
      const patched = await api.request({
        method: 'PATCH',
        path: `/webhook-endpoints/${created.id}`,
        key: org.apiKey,
        payload: { url: own.url },
      });
      expect(patched.statusCode).toBe(200);
      for (let i = 0; i < 3; i++) await emit(api.platform.db, org.orgId, 'invoice.posted');
      await own.waitFor(3);
      const after = await rotated(org, created.id);
      for (let i = 0; i < 3; i++) await emit(api.platform.db, org.orgId, 'invoice.posted');
      await own.waitFor(6);
      held.splice(0, 1, after.secret);
      for (let i = 0; i < 3; i++) await emit(api.platform.db, org.orgId, 'invoice.posted');
      const events = await eventually(
        () => storedEvents(api.platform.db, created.id),
        (rows) => rows.length === 9 && rows.every((row) => row.status === 'SUCCESS'),
      );
      expect(events.every((event) => event.attempts === 1)).toBe(true);
      expect(own.deliveries.every((delivery) => delivery.headers['webhook-signature'])).toBe(true);
    } finally {
      await own.close();
    }
  });

  it('answers 422 with details for an out-of-range or malformed expire_previous_in', async () => {
    const org = await createTestOrg(api.platform.db);
    const created = await createEndpoint(org);
    for (const [payload, code] of [
      [{ expire_previous_in: -1 }, 'out_of_range'],
      [{ expire_previous_in: 604_801 }, 'out_of_range'],
      [{ expire_previous_in: 1.5 }, undefined],
      [{ expire_previous_in: '3600' }, undefined],
      [{ expire_previous_in: null }, undefined],
      [{ expire_in: 3600 }, 'unknown_field'],
    ] as const) {
      const response = await rotate(org, created.id, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      const body = response.json();
      expect(body.error_code).toBe('VALIDATION_ERROR');
      const field = 'expire_in' in payload ? 'expire_in' : 'expire_previous_in';
      expect(body.details, JSON.stringify(payload)).toEqual([expect.objectContaining({ field })]);
      if (code) expect(body.details[0].code, JSON.stringify(payload)).toBe(code);
    }
    for (const edge of [0, 604_800]) {
      expect((await rotate(org, created.id, { expire_previous_in: edge })).statusCode).toBe(200);
    }
    const malformed = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${created.id}/rotate-secret`,
      key: org.apiKey,
      headers: { 'content-type': 'application/json' },
      payload: '{"expire_previous_in": ',
    });
    expect(malformed.statusCode).toBe(400);
  });

  it("answers 404 for an unknown, deleted or another organization's endpoint, and changes nothing", async () => {
    const org = await createTestOrg(api.platform.db);
    const other = await createTestOrg(api.platform.db);
    const foreign = await createEndpoint(other);
    const deleted = await createEndpoint(org);
    expect(
      (await api.request({ method: 'DELETE', path: `/webhook-endpoints/${deleted.id}`, key: org.apiKey }))
        .statusCode,
    ).toBe(204);
    for (const id of [MISSING_ID, foreign.id, deleted.id, 'not-a-uuid']) {
      const response = await rotate(org, id, {});
      expect(response.statusCode, id).toBe(404);
      expect(response.json().error_code).toBe('NOT_FOUND');
    }
    expect((await storedSecrets(foreign.id)).secret).toBe(foreign.secret);
    expect((await storedSecrets(deleted.id)).secret).toBe(deleted.secret);
    const unauthenticated = await api.request({
      method: 'POST',
      path: `/webhook-endpoints/${foreign.id}/rotate-secret`,
    });
    expect(unauthenticated.statusCode).toBe(401);
  });
});
