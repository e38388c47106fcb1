import { describe, expect, it } from 'vitest';
import { Database } from '../../libs/db/index.js';
import { checkReadiness, databaseCheck, redisCheck } from '../../libs/observability/index.js';
import { connectRedis } from '../../libs/redis/index.js';
import { testServices } from '../helpers/services.js';

/** The probes /readyz runs, against the real Postgres and Redis: up while they answer, down once they cannot. */
describe('dependency checks', () => {
  it('finds the database ready while it answers, and down once its pool is closed', async () => {
    const db = new Database(testServices().databaseUrl, { poolSize: 1 });
    const check = databaseCheck(db);
    expect(check.name).toBe('database');
    expect(await checkReadiness([check])).toMatchObject({
      ready: true,
      checks: { database: { status: 'ok' } },
    });
    await db.close();
    const closed = await checkReadiness([check]);
    expect(closed.ready).toBe(false);
    expect(closed.checks.database).toMatchObject({ status: 'down', error: expect.any(String) });
  });

  it('finds Redis ready while it answers PING, and down once the connection is gone', async () => {
    const redis = await connectRedis(testServices().redisUrl, 2000);
    const check = redisCheck(redis);
    expect(check.name).toBe('redis');
    expect(await checkReadiness([check])).toMatchObject({ ready: true, checks: { redis: { status: 'ok' } } });
    redis.disconnect();
    const gone = await checkReadiness([check]);
    expect(gone.ready).toBe(false);
    expect(gone.checks.redis).toMatchObject({ status: 'down', error: expect.any(String) });
  });
});
