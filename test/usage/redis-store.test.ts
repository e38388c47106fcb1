import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import { RedisUsageDedupStore } from '../../libs/usage/index.js';
import { testServices, uniqueName } from '../helpers/services.js';

const PENDING_TTL = 60;
const COMMITTED_TTL = 30 * 86_400;

describe('RedisUsageDedupStore', () => {
  let redis: Redis;
  let store: RedisUsageDedupStore;
  let prefix: string;

  beforeAll(async () => {
    redis = await connectRedis(testServices().redisUrl);
    prefix = `${uniqueName('dedup')}:`;
    store = new RedisUsageDedupStore(redis, prefix);
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('commits a pending record that is still ours, for the committed ttl', async () => {
    const key = `${prefix}usage:1:2:mine`;
    const pending = 'P|11111111-1111-4111-8111-111111111111|1|0|0';
    const reservation = await store.reserve({
      bucket: undefined,
      entries: [{ key, pending }],
      pendingTtlSeconds: PENDING_TTL,
    });
    expect(reservation.existing).toEqual([null]);
    expect(await redis.ttl(key)).toBeLessThanOrEqual(PENDING_TTL);
    await store.commit([{ key, pending, committed: `C${pending.slice(1)}` }], COMMITTED_TTL);
    expect(await redis.get(key)).toBe(`C${pending.slice(1)}`);
    expect(await redis.ttl(key)).toBeGreaterThan(PENDING_TTL);
  });

  it("leaves another request's record as it was when a late commit finds its own gone", async () => {
    const key = `${prefix}usage:1:2:late`;
    const ours = 'P|22222222-2222-4222-8222-222222222222|1|0|0';
    // Ours expired; another request reserved the key and committed its event since.
    const theirs = 'C|33333333-3333-4333-8333-333333333333|5|0|0';
    await redis.set(key, theirs, 'EX', COMMITTED_TTL);
    await store.commit([{ key, pending: ours, committed: `C${ours.slice(1)}` }], COMMITTED_TTL);
    expect(await redis.get(key)).toBe(theirs);
    expect(await redis.ttl(key)).toBeGreaterThan(PENDING_TTL);
    // Theirs still pending: put back for a pending record's time.
    const pendingTheirs = `P${theirs.slice(1)}`;
    await redis.set(key, pendingTheirs, 'EX', PENDING_TTL);
    await store.commit([{ key, pending: ours, committed: `C${ours.slice(1)}` }], COMMITTED_TTL);
    expect(await redis.get(key)).toBe(pendingTheirs);
    expect(await redis.ttl(key)).toBeLessThanOrEqual(PENDING_TTL);
  });
});
