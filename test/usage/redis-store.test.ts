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
  redis = await connectRedis(testServices().redisUrl);
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

  it('reserves a free identity once, for the whole ttl, and shows the record to the next', async () => {
    const key = freshKey();
    expect((await reserve(key, OURS)).existing).toEqual([null]);
    expect((await reserve(key, THEIRS)).existing).toEqual([OURS]);
    expect(await store.get(key)).toBe(OURS);
    if (name === 'RedisUsageDedupStore') expect(await redis.ttl(key)).toBeGreaterThan(TTL - 5);
  });

  it("adopts a pending record that is still there, after which its owner's release leaves it", async () => {
    const key = freshKey();
    // Reserved for a minute, as an earlier version did: adopted, it lives for the whole ttl.
    await store.reserve({ bucket: undefined, entries: [{ key, pending: OURS }], ttlSeconds: 60 });
    const adopted = `A${OURS.slice(1)}`;
    expect(await store.replace(key, OURS, adopted, TTL)).toBe(adopted);
    // What another found before the adoption changes nothing.
    expect(await store.replace(key, OURS, adopted, TTL)).toBe(adopted);
    await store.release([{ key, pending: OURS }]);
    await store.flush();
    expect(await store.get(key)).toBe(adopted);
    if (name === 'RedisUsageDedupStore') expect(await redis.ttl(key)).toBeGreaterThan(TTL - 5);
    // Appended and acknowledged: committed.
    const committed = `C${OURS.slice(1)}`;
    expect(await store.replace(key, adopted, committed, TTL)).toBe(committed);
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

  it("neither adopts nor releases another request's record", async () => {
    const key = freshKey();
    await reserve(key, THEIRS);
    expect(await store.replace(key, OURS, `A${OURS.slice(1)}`, TTL)).toBe(THEIRS);
    await store.release([{ key, pending: OURS }]);
    await store.flush();
    expect(await store.get(key)).toBe(THEIRS);
  });
});
