import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  ApiKeyAuthenticator,
  createApiKey,
  generateApiKey,
  hashApiKey,
  revokeApiKey,
} from '../../libs/auth/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { recordingQueries, type SentQuery } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

let api: TestApi;
let orgA: TestOrg;
let orgB: TestOrg;

beforeAll(async () => {
  api = await startTestApi();
  orgA = await createTestOrg(api.platform.db);
  orgB = await createTestOrg(api.platform.db);
});
afterAll(() => api.close());

async function expect401(headers: Record<string, string>, detail: RegExp) {
  const response = await api.request({ method: 'GET', path: '/openapi.json', headers });
  expect(response.statusCode).toBe(401);
  const body = response.json();
  expect(body).toEqual({
    error_code: 'UNAUTHORIZED',
    detail: expect.stringMatching(detail),
    request_id: expect.any(String),
  });
  expect(body.request_id).toBe(response.headers['x-request-id']);
  expect(response.headers['x-ratelimit-limit']).toBeUndefined();
  return body;
}

describe('API key authentication', () => {
  it('answers 401 for a missing key', () => expect401({}, /API key is required/));
  it('answers 401 for a non-bearer scheme', () =>
    expect401({ authorization: `Basic ${orgA.apiKey}` }, /required/));
  it('answers 401 for a malformed key', () => expect401({ authorization: 'Bearer not-a-key' }, /malformed/));
  it('answers 401 for an unknown key', () =>
    expect401({ authorization: `Bearer ${generateApiKey('live').key}` }, /invalid or has been revoked/));

  it('never echoes the key in an error', async () => {
    const unknown = generateApiKey('test').key;
    const response = await api.request({
      method: 'GET',
      path: '/openapi.json',
      headers: { authorization: `Bearer ${unknown}` },
    });
    expect(response.body).not.toContain(unknown);
    expect(response.body).not.toContain(unknown.slice(8, 20));
  });

  it('accepts a valid key, with any case of the scheme', async () => {
    const response = await api.request({
      method: 'GET',
      path: '/openapi.json',
      headers: { authorization: `bearer ${orgA.apiKey}` },
    });
    expect(response.statusCode).toBe(200);
  });

  it('resolves each key to its own organization only', async () => {
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 30, maxEntries: 100 });
    expect((await authenticator.authenticate(`Bearer ${orgA.apiKey}`)).orgId).toBe(orgA.orgId);
    expect((await authenticator.authenticate(`Bearer ${orgB.apiKey}`)).orgId).toBe(orgB.orgId);
    // with the organization's plan and rate-limit override, which the limiter reads from it
    const limited = await createTestOrg(api.platform.db, { plan: 'starter', requestsPerHour: 777 });
    expect(await authenticator.authenticate(`Bearer ${limited.apiKey}`)).toEqual({
      orgId: limited.orgId,
      keyId: limited.keyId,
      plan: 'starter',
      rateLimitOverride: 777,
    });
    expect(await authenticator.authenticate(`Bearer ${orgA.apiKey}`)).toMatchObject({
      plan: 'scale',
      rateLimitOverride: null,
    });
    const meta = await api.request({ method: 'GET', path: '/meta', key: orgB.apiKey });
    expect(meta.statusCode).toBe(200);
  });

  it("refuses a key with one letter's case changed: keys are compared exactly", async () => {
    const key = (await createApiKey(api.platform.db, { orgId: orgA.orgId })).api_key;
    const at = key.slice(8).search(/[A-Za-z]/) + 8;
    const letter = key[at]!;
    const flipped = `${key.slice(0, at)}${letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase()}${key.slice(at + 1)}`;
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 30, maxEntries: 100 });
    expect((await authenticator.authenticate(`Bearer ${key}`)).orgId).toBe(orgA.orgId);
    await expect(authenticator.authenticate(`Bearer ${flipped}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
  });

  it('stores only a SHA-256 hash and a display prefix', async () => {
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId, name: 'audit' });
    const { rows } = await api.platform.db.query('SELECT * FROM api_keys WHERE id = $1', [key.id]);
    expect(key.api_key).toMatch(/^sk_live_[A-Za-z0-9_-]{43}$/);
    expect(key).toMatchObject({ org_id: orgA.orgId, name: 'audit', prefix: key.api_key.slice(0, 12) });
    expect(JSON.stringify(rows[0]!)).not.toContain(key.api_key);
    expect(rows[0]!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0]!.prefix).toBe(key.api_key.slice(0, 12));
  });

  it('takes a revocation into account within the cache TTL, not before', async () => {
    let now = 1_000_000;
    const authenticator = new ApiKeyAuthenticator(api.platform.db, {
      ttlSeconds: 30,
      maxEntries: 100,
      now: () => now,
    });
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    const header = `Bearer ${key.api_key}`;
    expect((await authenticator.authenticate(header)).orgId).toBe(orgA.orgId);
    await revokeApiKey(api.platform.db, key.id);
    // cached: the hot path did not query Postgres again
    expect((await authenticator.authenticate(header)).orgId).toBe(orgA.orgId);
    // the entry serves up to its expiry instant, not at it: the TTL is a bound, not a minimum
    now += 29_999;
    expect((await authenticator.authenticate(header)).orgId).toBe(orgA.orgId);
    now += 1;
    await expect(authenticator.authenticate(header)).rejects.toThrow(ApiError);
    await expect(authenticator.authenticate(header)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it('drops a revoked key from the cache at the next read of revocations, whatever the TTL', async () => {
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 3600, maxEntries: 100 });
    const kept = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    const revoked = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    for (const key of [kept, revoked]) await authenticator.authenticate(`Bearer ${key.api_key}`);
    await revokeApiKey(api.platform.db, revoked.id);
    expect((await authenticator.authenticate(`Bearer ${revoked.api_key}`)).orgId).toBe(orgA.orgId);
    expect(await authenticator.evictRevoked()).toBe(1);
    await expect(authenticator.authenticate(`Bearer ${revoked.api_key}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect((await authenticator.authenticate(`Bearer ${kept.api_key}`)).orgId).toBe(orgA.orgId);
    expect(await authenticator.evictRevoked()).toBe(0);
  });

  it('drops a cached key whose revocation committed a minute and a half late', async () => {
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 3600, maxEntries: 100 });
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    await authenticator.authenticate(`Bearer ${key.api_key}`);
    // revoked_at is the revoking transaction's start: a slow transaction (or failed reads) makes it old when seen
    await api.platform.db.query(
      `UPDATE api_keys SET revoked_at = now() - interval '90 seconds' WHERE id = $1`,
      [key.id],
    );
    expect(await authenticator.evictRevoked()).toBe(1);
    await expect(authenticator.authenticate(`Bearer ${key.api_key}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
  });

  it('refuses a key revoked by another process within seconds over HTTP', async () => {
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    const get = () => api.request({ method: 'GET', path: '/customers', key: key.api_key });
    expect((await get()).statusCode).toBe(200);
    await revokeApiKey(api.platform.db, key.id);
    const started = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - started < 5000) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      status = (await get()).statusCode;
    }
    expect(status).toBe(401);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('reads revocations every second, one read at a time, until told to stop', async () => {
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 30, maxEntries: 100 });
    let finish = () => {};
    const evict = vi.spyOn(authenticator, 'evictRevoked').mockImplementation(
      () =>
        new Promise<number>((resolve) => {
          finish = () => resolve(0);
        }),
    );
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const stop = authenticator.watchRevocations(() => {});
      vi.advanceTimersByTime(999);
      expect(evict).toHaveBeenCalledTimes(0);
      vi.advanceTimersByTime(1);
      expect(evict).toHaveBeenCalledTimes(1);
      // a slow read is not overtaken by the next ones
      vi.advanceTimersByTime(3000);
      expect(evict).toHaveBeenCalledTimes(1);
      finish();
      await new Promise((resolve) => setImmediate(resolve));
      vi.advanceTimersByTime(1000);
      expect(evict).toHaveBeenCalledTimes(2);
      finish();
      await new Promise((resolve) => setImmediate(resolve));
      stop();
      vi.advanceTimersByTime(5000);
      expect(evict).toHaveBeenCalledTimes(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a revoked key over HTTP once the cache entry expires', async () => {
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    await revokeApiKey(api.platform.db, key.id);
    // never seen before by this app's authenticator, so nothing is cached
    const response = await api.request({ method: 'GET', path: '/openapi.json', key: key.api_key });
    expect(response.statusCode).toBe(401);
  });

  // libs/auth/authenticator.ts: unknown keys are cached too, briefly (min(TTL, 5 s))
  it.each([
    { ttlSeconds: 60, rememberedMs: 5000, case: 'for at most 5 s, however long the TTL of known keys' },
    {
      ttlSeconds: 2,
      rememberedMs: 2000,
      case: 'no longer than the TTL of known keys when that is under 5 s',
    },
  ])('remembers an unknown key $case', async ({ ttlSeconds, rememberedMs }) => {
    let now = 2_000_000;
    const authenticator = new ApiKeyAuthenticator(api.platform.db, {
      ttlSeconds,
      maxEntries: 100,
      now: () => now,
    });
    const fresh = generateApiKey('live');
    const header = `Bearer ${fresh.key}`;
    await expect(authenticator.authenticate(header)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    // the key comes to exist (made meanwhile): refused from the cache until the time has passed
    await api.platform.db.query(
      `INSERT INTO api_keys (org_id, name, environment, key_hash, prefix) VALUES ($1, '', 'live', $2, $3)`,
      [orgA.orgId, fresh.hash, fresh.prefix],
    );
    now += rememberedMs - 1;
    await expect(authenticator.authenticate(header)).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
    now += 1;
    expect((await authenticator.authenticate(header)).orgId).toBe(orgA.orgId);
  });

  it('keeps the first revocation time when a key is revoked again', async () => {
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    const first = await revokeApiKey(api.platform.db, key.id);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const again = await revokeApiKey(api.platform.db, key.id);
    expect(again.revoked_at).toBe(first.revoked_at);
  });

  it('looks a key up again once its entry expires, without pushing another key out of a full cache', async () => {
    let now = 3_000_000;
    const authenticator = new ApiKeyAuthenticator(api.platform.db, {
      ttlSeconds: 30,
      maxEntries: 2,
      now: () => now,
    });
    const cache = (authenticator as unknown as { cache: Map<string, unknown> }).cache;
    const known = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    const unknown = generateApiKey('live').key;
    await authenticator.authenticate(`Bearer ${known.api_key}`);
    await expect(authenticator.authenticate(`Bearer ${unknown}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
    // the unknown key's entry (5 s) has expired, the known key's (30 s) has not
    now += 5_000;
    await expect(authenticator.authenticate(`Bearer ${unknown}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect([...cache.keys()].sort()).toEqual([hashApiKey(known.api_key), hashApiKey(unknown)].sort());
  });

  it('looks a key up once for requests that miss the cache together, and again after it expires', async () => {
    let now = 4_000_000;
    const sent: SentQuery[] = [];
    const authenticator = new ApiKeyAuthenticator(recordingQueries(api.platform.db, sent), {
      ttlSeconds: 30,
      maxEntries: 100,
      now: () => now,
    });
    // nothing cached, nothing to evict: revocations are not even read
    expect(await authenticator.evictRevoked()).toBe(0);
    expect(sent).toHaveLength(0);
    const key = await createApiKey(api.platform.db, { orgId: orgB.orgId });
    const header = `Bearer ${key.api_key}`;
    const contexts = await Promise.all([1, 2, 3].map(() => authenticator.authenticate(header)));
    expect(contexts.map((context) => context.keyId)).toEqual([key.id, key.id, key.id]);
    expect(sent).toHaveLength(1);
    now += 30_000;
    await authenticator.authenticate(header);
    expect(sent).toHaveLength(2);
  });

  it('counts as evicted only keys it had cached as valid, not one it already refuses', async () => {
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 3600, maxEntries: 100 });
    const key = await createApiKey(api.platform.db, { orgId: orgA.orgId });
    await revokeApiKey(api.platform.db, key.id);
    // first seen revoked: cached as unknown, which a read of revocations leaves as it is
    await expect(authenticator.authenticate(`Bearer ${key.api_key}`)).rejects.toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect(await authenticator.evictRevoked()).toBe(0);
  });

  it('keeps the cache bounded', async () => {
    const authenticator = new ApiKeyAuthenticator(api.platform.db, { ttlSeconds: 30, maxEntries: 2 });
    for (let i = 0; i < 5; i++) {
      await authenticator.authenticate(`Bearer ${generateApiKey('live').key}`).catch(() => {});
    }
    expect((authenticator as unknown as { cache: Map<string, unknown> }).cache.size).toBe(2);
  });
});
