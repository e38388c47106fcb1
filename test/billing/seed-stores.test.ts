import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouse, openClickHouse } from '../../libs/clickhouse/index.js';
import { consoleSettings, loadConfig } from '../../libs/config/index.js';
import { openUsageAggregator, startUsageSinks, type UsageSinks } from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runTs } from '../helpers/processes.js';
import { recordCredentials, runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';

/**
 * `console seed` in the distributed mode: its usage goes through the usage log as accepted events
 * do, so once the sinks caught up ClickHouse holds exactly what Postgres holds, and every usage
 * figure read from either agrees.
 */
describe('console seed, distributed', () => {
  let database: TestDatabase;
  let sinks: UsageSinks;
  let clickhouse: ClickHouse;
  let env: Record<string, string>;
  let orgId: number;

  beforeAll(async () => {
    database = await createTestDatabase('seed_stores');
    const topic = uniqueName('seed_usage');
    const chDatabase = uniqueName('seed_ch');
    env = {
      DATABASE_URL: database.url,
      KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
      KAFKA_USAGE_TOPIC: topic,
      KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
      CLICKHOUSE_URL: testServices().clickhouseUrl,
      CLICKHOUSE_DATABASE: chDatabase,
      LOG_LEVEL: 'silent',
    };
    const config = loadConfig(consoleSettings, env);
    sinks = await startUsageSinks({
      config: { ...config, SINK_BATCH_SIZE: 5000, SINK_FLUSH_MS: 50 },
      db: database.db,
      log: runLogger('sinks'),
    });
    clickhouse = openClickHouse({ url: config.CLICKHOUSE_URL!, database: chDatabase });
    const seeded = await runTs('bin/console.ts', ['seed', '--orgs', '1'], env);
    expect(seeded.code, seeded.stderr).toBe(0);
    const { orgs } = JSON.parse(seeded.stdout) as { orgs: { id: number; api_key: string }[] };
    recordCredentials(orgs[0]!.api_key);
    orgId = orgs[0]!.id;
    const aggregator = await openUsageAggregator(config, database.db);
    try {
      await aggregator.caughtUp({ timeoutMs: 60_000 });
    } finally {
      await aggregator.close();
    }
  }, 180_000);

  afterAll(async () => {
    await sinks?.stop();
    await clickhouse?.close();
    await database?.drop();
  });

  it('writes every seeded event to ClickHouse as to Postgres: same items, counts and exact sums', async () => {
    const { rows: postgres } = await database.db.query<{ item: number; events: number; total: string }>(
      `SELECT subscription_item_id AS item, count(*)::int AS events, sum(quantity)::text AS total
         FROM usage_events WHERE org_id = $1 GROUP BY 1 ORDER BY 1`,
      [orgId],
    );
    expect(postgres.length).toBeGreaterThanOrEqual(2);
    expect(postgres.reduce((n, row) => n + row.events, 0)).toBeGreaterThan(100);
    const fromClickHouse = await clickhouse.rows<{ item: number; events: number; total: string }>(
      `SELECT subscription_item_id AS item, toUInt32(count()) AS events, toString(sum(quantity)) AS total
         FROM ${clickhouse.database}.usage_events FINAL WHERE org_id = ${orgId} GROUP BY item ORDER BY item`,
    );
    expect(
      fromClickHouse.map((row) => ({
        item: Number(row.item),
        events: Number(row.events),
        total: decimal(row.total),
      })),
    ).toEqual(postgres.map((row) => ({ ...row, total: decimal(row.total) })));
  });
});

/** A decimal's text without trailing zeros, so 12.50000000 (Postgres) and 12.5 (ClickHouse) compare. */
function decimal(text: string): string {
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}
