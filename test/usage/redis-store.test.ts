import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryRateLimitStore } from '../../libs/rate-limit/index.js';
import { connectRedis, type Redis } from '../../libs/redis/index.js';
import { MemoryUsageDedupStore, RedisUsageDedupStore, type UsageDedupStore } from '../../libs/usage/index.js';
import { testServices, uniqueName } from '../helpers/services.js';

const TTL = 30 * 86_400;
const OURS = 'P|11111111-1111-4111-8111-111111111111|1|0|0';
const THEIRS = 'P|33333333-3333-4333-8333-333333333333|5|0|0';

let redis: Redis;
let prefix: string;

beforeAll(async () => {
  redis = await connectRedis(testServices().redisUrl, 2000);
  prefix = `${uniqueName('dedup')}:`;
});
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();
});

// One contract, two stores: what the embedded mode does must be what Redis does.
describe.each([
  ['RedisUsageDedupStore', () => new RedisUsageDedupStore(redis, prefix)],
  ['MemoryUsageDedupStore', () => new MemoryUsageDedupStore(new MemoryRateLimitStore())],
] as const)('%s', (name, makeStore) => {
  let store: UsageDedupStore;
  let n = 0;
  const freshKey = () => `${prefix}usage:1:2:${name}-${++n}`;
  const reserve = (key: string, pending: string) =>
    store.reserve({ bucket: undefined, entries: [{ key, pending }], ttlSeconds: TTL });

  beforeAll(() => {
    store = makeStore();
  });

  /**
   * Redis holds the record for exactly `ttlSeconds` from the write made after `sinceMs`: a ttl a
   * second short would let a client's retry on the last day of the window count twice.
   */
  const expectWholeTtl = async (key: string, sinceMs: number) => {
    if (name !== 'RedisUsageDedupStore') return;
    const left = await redis.pttl(key);
    expect(left, key).toBeLessThanOrEqual(TTL * 1000);
    expect(left, key).toBeGreaterThanOrEqual(TTL * 1000 - (Date.now() - sinceMs));
  };

  it('reserves a free identity once, for the whole ttl, and shows the record to the next', async () => {
    const key = freshKey();
    const reservedFrom = Date.now();
    expect((await reserve(key, OURS)).existing).toEqual([null]);
    await expectWholeTtl(key, reservedFrom);
    expect((await reserve(key, THEIRS)).existing).toEqual([OURS]);
    expect(await store.get(key)).toBe(OURS);
  });

  it("adopts a pending record that is still there, after which its owner's release leaves it", async () => {
    const key = freshKey();
    // Reserved for a minute, as an earlier version did: adopted, it lives for the whole ttl.
    await store.reserve({ bucket: undefined, entries: [{ key, pending: OURS }], ttlSeconds: 60 });
    const adopted = `A${OURS.slice(1)}`;
    const adoptedFrom = Date.now();
    expect(await store.replace(key, OURS, adopted, TTL)).toBe(adopted);
    await expectWholeTtl(key, adoptedFrom);
    // What another found before the adoption changes nothing.
    expect(await store.replace(key, OURS, adopted, TTL)).toBe(adopted);
    await store.release([{ key, pending: OURS }]);
    await store.flush();
    expect(await store.get(key)).toBe(adopted);
    // Appended and acknowledged: committed, for a whole ttl from the commit.
    const committed = `C${OURS.slice(1)}`;
    const committedFrom = Date.now();
    expect(await store.replace(key, adopted, committed, TTL)).toBe(committed);
    await expectWholeTtl(key, committedFrom);
    expect(await store.get(key)).toBe(committed);
  });

  it('releases a pending record nobody adopted; adopting it then finds the key free', async () => {
    const key = freshKey();
    await reserve(key, OURS);
    await store.release([{ key, pending: OURS }]);
    await store.flush();
    expect(await store.get(key)).toBeNull();
    expect(await store.replace(key, OURS, `A${OURS.slice(1)}`, TTL)).toBeNull();
    expect(await store.get(key)).toBeNull();
  });

  it('counts the reservations of one turn one by one per bucket, and reserves nothing for a refused one', async () => {
    const bucket = { key: `${prefix}rl:${name}-${++n}`, limit: 3, ttlSeconds: 3900 };
    const other = { key: `${prefix}rl:${name}-${++n}`, limit: 10, ttlSeconds: 3900 };
    const keys = Array.from({ length: 7 }, freshKey);
    const taken = keys[3]!;
    await reserve(taken, THEIRS);
    // Submitted together: the Redis store sends them in one script call.
    const results = await Promise.all([
      store.reserve({ bucket, entries: [{ key: keys[0]!, pending: OURS }], ttlSeconds: TTL }),
      store.reserve({ bucket: other, entries: [{ key: keys[1]!, pending: OURS }], ttlSeconds: TTL }),
      store.reserve({ bucket: undefined, entries: [{ key: keys[2]!, pending: OURS }], ttlSeconds: TTL }),
      store.reserve({
        bucket,
        entries: [
          { key: taken, pending: OURS },
          { key: keys[4]!, pending: OURS },
        ],
        ttlSeconds: TTL,
      }),
      store.reserve({ bucket, entries: [{ key: keys[5]!, pending: OURS }], ttlSeconds: TTL }),
      store.reserve({ bucket, entries: [{ key: keys[6]!, pending: OURS }], ttlSeconds: TTL }),
      store.reserve({ bucket: other, entries: [], ttlSeconds: TTL }),
    ]);
    expect(results).toEqual([
      { count: 1, allowed: true, existing: [null] },
      { count: 1, allowed: true, existing: [null] },
      { count: 0, allowed: true, existing: [null] },
      { count: 2, allowed: true, existing: [THEIRS, null] },
      { count: 3, allowed: true, existing: [null] },
      { count: 3, allowed: false, existing: [null] },
      { count: 2, allowed: true, existing: [] },
    ]);
    expect(await store.get(keys[6]!)).toBeNull();
    expect(await store.get(keys[5]!)).toBe(OURS);
    // The next turn sees the counts of this one.
    const next = await store.reserve({
      bucket,
      entries: [{ key: freshKey(), pending: OURS }],
      ttlSeconds: TTL,
    });
    expect(next).toMatchObject({ count: 3, allowed: false });
    if (name === 'RedisUsageDedupStore') {
      expect(await redis.get(bucket.key)).toBe('3');
      expect(await redis.ttl(bucket.key)).toBeGreaterThan(3900 - 5);
    }
  });

  it("neither adopts nor releases another request's record", async () => {
    const key = freshKey();
    await reserve(key, THEIRS);
    expect(await store.replace(key, OURS, `A${OURS.slice(1)}`, TTL)).toBe(THEIRS);
    await store.release([{ key, pending: OURS }]);
    await store.flush();
    expect(await store.get(key)).toBe(THEIRS);
  });
});
