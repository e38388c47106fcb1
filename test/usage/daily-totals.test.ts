import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PostgresDailyTotalsAggregator,
  PostgresUsageAggregator,
  PostgresUsageSink,
  type UsageEventRecord,
} from '../../libs/usage/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * usage_daily_totals stays equal to the events it sums, whatever the redeliveries, duplicate
 * identities and voids (applied twice): the daily-totals aggregator answers what the one over the
 * events answers, for windows on and off day boundaries.
 */

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('daily_totals');
});
afterAll(() => database.drop());

const DAY = 86_400_000;
const base = Date.UTC(2026, 10, 1);

function event(key: string, quantity: string, occurredAtMs: number, orgId = 1, item = 10): UsageEventRecord {
  return {
    id: randomUUID(),
    orgId,
    subscriptionItemId: item,
    idempotencyKey: key,
    quantity,
    occurredAtMs,
    recordedAtMs: Date.now(),
  };
}

describe('daily totals', () => {
  it('equal the events they sum through redeliveries, duplicates and voids', async () => {
    const sink = new PostgresUsageSink(database.db);
    const events: UsageEventRecord[] = [];
    for (let i = 0; i < 200; i++) {
      // spread over ten days, at odd hours, some on the day boundaries themselves
      const at = base + Math.floor((i * 7919) % (10 * 24)) * 3_600_000 + (i % 3 === 0 ? 0 : 1234);
      events.push(event(`k-${i}`, `${(i % 17) + 0.125}`, at, 1, i % 2 ? 10 : 11));
    }
    events.push(event('other-org', '1000', base + DAY, 2, 10));
    // another organization's, in a partial day that windows below read from the events
    events.push(event('other-org-hour', '1000', base + DAY + 5_000_000, 2, 10));
    // on the instant the ten days end (outside [base, base + 10 days)), and on a window's end below
    events.push(event('at-the-end', '41', base + 10 * DAY, 1, 10));
    events.push(event('at-an-hour', '43', base + 4 * DAY + 5 * 3_600_000, 1, 11));
    await sink.write(events.slice(0, 120));
    await sink.write(events); // a redelivery of the first 120 with the rest
    // the same identities under new ids (a retry after a lost acknowledgement): the first stays
    await sink.writeReturningStored(
      events.slice(0, 30).map((e) => ({ ...e, id: randomUUID(), quantity: '999' })),
    );
    const voids = [events[3]!, events[50]!, events[199]!].map((e) => ({ event: e, voidedAtMs: Date.now() }));
    await sink.writeVoids(voids);
    await sink.writeVoids(voids); // applied again

    const daily = new PostgresDailyTotalsAggregator(database.db);
    const raw = new PostgresUsageAggregator(database.db);
    const windows: [number, number][] = [
      [base, base + 10 * DAY],
      [base + 5_000, base + 3 * DAY + 17],
      [base + DAY + 3_600_000, base + DAY + 7_200_000],
      [base + 2 * DAY, base + 2 * DAY],
      [base - DAY, base + 30 * DAY],
      // partial days read from the events: one holds a voided event (k-199, day 1 at 17:00)
      [base + DAY + 3_600_000, base + 5 * DAY + 1],
      // ending on an event's instant, with and without whole days before it
      [base + 4 * DAY + 3_600_000, base + 4 * DAY + 5 * 3_600_000],
      [base + DAY + 3_600_000, base + 4 * DAY + 5 * 3_600_000],
      // from a midnight to a later hour: whole days, then the partial last day from the events
      [base, base + 4 * DAY + 5 * 3_600_000 + 1],
      [base + 2 * DAY, base + 3 * DAY + 3_600_000 + 1],
    ];
    for (const [from, to] of windows) {
      const window = [new Date(from), new Date(to)] as const;
      expect(await daily.totals(1, [10, 11, 12], ...window), `${from}..${to}`).toEqual(
        await raw.totals(1, [10, 11, 12], ...window),
      );
    }
    const days = (await daily.daily(1, [10, 11], new Date(base), new Date(base + 10 * DAY))).sort(
      (a, b) => a.date.localeCompare(b.date) || a.subscription_item_id - b.subscription_item_id,
    );
    const rawDays = (await raw.daily(1, [10, 11], new Date(base), new Date(base + 10 * DAY))).sort(
      (a, b) => a.date.localeCompare(b.date) || a.subscription_item_id - b.subscription_item_id,
    );
    expect(days.filter((d) => d.quantity !== '0.00000000')).toEqual(rawDays);
    expect(rawDays.length).toBeGreaterThan(10);
  });
});
