import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouse, openClickHouse } from '../../libs/clickhouse/index.js';
import { formatScaled, parseScaled } from '../../libs/money/index.js';
import { openUsageAggregator, PostgresUsageAggregator } from '../../libs/usage/index.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { testServices, uniqueName } from '../helpers/services.js';
import {
  createUsageItems,
  eventually,
  startUsageStack,
  type UsageItems,
  type UsageStack,
} from './support.js';

const EVENTS = 1500;

/**
 * The whole path of the distributed mode: the uWS ingest service (Redis + Kafka), both sinks as
 * consumer groups, Postgres and ClickHouse. N events, a quarter of them sent again (with other
 * quantities, which must not count), end as exactly the distinct events in Postgres and the exact
 * decimal sum in ClickHouse, and both aggregation ports agree.
 */
describe('usage end to end: ingest, Kafka, both sinks', () => {
  let stack: UsageStack;
  let clickhouse: ClickHouse;
  let org: TestOrg;
  let items: UsageItems;

  beforeAll(async () => {
    const clickhouseDatabase = uniqueName('usage_e2e');
    stack = await startUsageStack('redis+kafka', {
      sinks: true,
      env: { CLICKHOUSE_URL: testServices().clickhouseUrl, CLICKHOUSE_DATABASE: clickhouseDatabase },
    });
    clickhouse = openClickHouse({ url: testServices().clickhouseUrl, database: clickhouseDatabase });
    org = await createTestOrg(stack.api.platform.db);
    items = await createUsageItems(stack.api.platform.db, org.orgId);
  });
  afterAll(async () => {
    await stack?.close();
    await clickhouse?.close();
  });

  it('stores exactly the distinct events, with the exact decimal sum, in Postgres and ClickHouse', async () => {
    const uws = stack.frontEnds.find((f) => f.name === 'uws')!;
    const quantity = (i: number) => `${(i % 50) + 1}.${String((i * 7919) % 100_000_000).padStart(8, '0')}`;
    const event = (i: number, q = quantity(i)) => ({
      subscription_item_id: i % 2 ? items.metered : items.otherMetered,
      quantity: Number(q),
      timestamp: new Date(Date.UTC(2026, 9, 1) + i * 1000).toISOString(),
      idempotency_key: `e2e-${i}`,
    });
    const first = Array.from({ length: EVENTS }, (_, i) => i);
    const repeated = first.filter((i) => i % 4 === 0);

    // Half through single requests, half through batches; then the repeats, both ways, concurrently.
    const singles = first.filter((i) => i % 2 === 0);
    const batched = first.filter((i) => i % 2 === 1);
    const send = async (indices: number[], quantityOf: (i: number) => string) => {
      const statuses: number[] = [];
      const single = indices.slice(0, indices.length / 2);
      const batch = indices.slice(indices.length / 2);
      await Promise.all([
        ...chunks(single, 50).map(async (chunk) => {
          for (const i of chunk) {
            const response = await uws.post('/usage/events', {
              key: org.apiKey,
              body: event(i, quantityOf(i)),
            });
            statuses.push(response.status);
          }
        }),
        ...chunks(batch, 250).map(async (chunk) => {
          const response = await uws.post('/usage/events/batch', {
            key: org.apiKey,
            body: { events: chunk.map((i) => event(i, quantityOf(i))) },
          });
          statuses.push(...response.body.data.map((r: { status: number }) => r.status));
        }),
      ]);
      return statuses;
    };
    const accepted = [...(await send(singles, quantity)), ...(await send(batched, quantity))];
    expect(accepted.filter((status) => status !== 201)).toEqual([]);
    const repeats = await send(repeated, (i) => `${(i % 9) + 1}`);
    expect(repeats.every((status) => status === 201)).toBe(true);

    const expectedSum = formatScaled(
      first.reduce((sum, i) => sum + parseScaled(quantity(i), 8), 0n),
      8,
    );
    const db = stack.api.platform.db;
    await eventually(async () => {
      const { rows } = await db.query<{ n: number; total: string }>(
        'SELECT count(*)::int AS n, sum(quantity)::text AS total FROM usage_events WHERE org_id = $1',
        [org.orgId],
      );
      expect(rows).toEqual([{ n: EVENTS, total: expectedSum }]);
    }, 30_000);
    await eventually(async () => {
      const rows = await clickhouse.rows<{ n: string; total: string }>(
        `SELECT count() AS n, toString(sum(quantity)) AS total FROM ${clickhouse.database}.usage_events FINAL
          WHERE org_id = ${org.orgId}`,
      );
      expect(rows).toEqual([{ n: String(EVENTS), total: expectedSum }]);
    }, 30_000);

    const window = [new Date(Date.UTC(2026, 9, 1)), new Date(Date.UTC(2026, 10, 1))] as const;
    const ids = [items.metered, items.otherMetered];
    const fromClickHouse = await openUsageAggregator(stack.api.config, db);
    try {
      const clickhouseTotals = await fromClickHouse.aggregator.totals(org.orgId, ids, ...window);
      const postgresTotals = await new PostgresUsageAggregator(db).totals(org.orgId, ids, ...window);
      expect(clickhouseTotals).toEqual(postgresTotals);
      const sum = [...clickhouseTotals.values()].reduce((total, value) => total + parseScaled(value, 8), 0n);
      expect(formatScaled(sum, 8)).toBe(expectedSum);
    } finally {
      await fromClickHouse.close();
    }
  });
});

function chunks<T>(items: T[], size: number): T[][] {
  const result: T[][] = [];
  for (let i = 0; i < items.length; i += size) result.push(items.slice(i, i + size));
  return result;
}
