import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { UsageRejection, UsageReporter, UsageReporterOptions } from '@billing-service/client';
import { expect } from 'vitest';
import type { Queryable } from '../../libs/db/index.js';
import { PROJECT_ROOT } from '../helpers/processes.js';
import { eventually } from '../usage/support.js';

const CLIENT = path.join(PROJECT_ROOT, 'clients/node');

/**
 * These tests run the client as its users get it: the build in clients/node/dist (`npm test`
 * builds it first). A build older than its sources would test other code: refuse it.
 */
export async function assertClientBuilt(): Promise<void> {
  const built = await stat(path.join(CLIENT, 'dist/index.js')).catch(() => undefined);
  if (!built) throw new Error('clients/node is not built: run `npm run build:client`');
  const newest = await newestSource(path.join(CLIENT, 'src'));
  if (newest > built.mtimeMs) {
    throw new Error('clients/node/dist is older than its sources: run `npm run build:client`');
  }
}

async function newestSource(directory: string): Promise<number> {
  let newest = 0;
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const file = path.join(directory, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, await newestSource(file));
    else if (!entry.name.endsWith('.test.ts')) newest = Math.max(newest, (await stat(file)).mtimeMs);
  }
  return newest;
}

/** The reporter's settings in these tests: short timers, so that faults cost seconds. */
export const TEST_REPORTER_SETTINGS = {
  flushIntervalMs: 50,
  maxBufferedEvents: 5000,
  requestTimeoutMs: 5000,
  retry: { baseDelayMs: 100, maxDelayMs: 2000 },
} satisfies Partial<UsageReporterOptions>;

/** One answer the reporter got, seen through its `fetch` option. */
export interface Exchange {
  startedAt: number;
  answeredAt: number;
  /** 0 when the request got no answer. */
  status: number;
  retryAfter: string | null;
}

/** A fetch that records every exchange (what the reporter did, not what it says it did). */
export function recordingFetch(exchanges: Exchange[]): UsageReporterOptions['fetch'] {
  return async (url, init) => {
    const startedAt = Date.now();
    try {
      const response = await fetch(url, init);
      exchanges.push({
        startedAt,
        answeredAt: Date.now(),
        status: response.status,
        retryAfter: response.headers.get('retry-after'),
      });
      return response;
    } catch (error) {
      exchanges.push({ startedAt, answeredAt: Date.now(), status: 0, retryAfter: null });
      throw error;
    }
  };
}

/** What a stream of reports sent, to be found in Postgres afterwards. */
export interface ReportedStream {
  /** Keys of the caller's events on the metered item: each must be stored exactly once. */
  keys: string[];
  /** Events without a key of the caller's (the reporter's UUIDv7), all at `marker`. */
  keyless: number;
  marker: Date;
  /** Keys of events on an item that cannot take usage: each must reach onRejected, none stored. */
  refused: string[];
}

/**
 * Reports `total` events, `perTick` at a time every `tickMs` (awaiting report(), so a full buffer
 * holds the stream back), and runs `fault` once half of them are reported, concurrently with the
 * rest. Every other event carries the caller's key; the others get the reporter's, at one marker
 * timestamp of this stream; one in twenty goes to `refusedItem` (licensed: 400 for each).
 */
export async function reportStream(
  reporter: UsageReporter,
  plan: {
    label: string;
    metered: number;
    refusedItem: number;
    total: number;
    perTick?: number;
    tickMs?: number;
    fault?: () => Promise<void>;
  },
): Promise<ReportedStream> {
  const perTick = plan.perTick ?? 200;
  const tickMs = plan.tickMs ?? 20;
  const marker = new Date(Date.now() - 3_600_000 - Math.floor(Math.random() * 1_000_000));
  const stream: ReportedStream = { keys: [], keyless: 0, marker, refused: [] };
  let fault: Promise<void> | undefined;
  for (let n = 0; n < plan.total; n++) {
    if (n === Math.floor(plan.total / 2) && plan.fault) fault = plan.fault();
    if (n % 20 === 7) {
      const key = `${plan.label}-refused-${n}`;
      stream.refused.push(key);
      await reporter.report({ subscription_item_id: plan.refusedItem, quantity: 1, idempotency_key: key });
    } else if (n % 2 === 0) {
      const key = `${plan.label}-${n}`;
      stream.keys.push(key);
      await reporter.report({ subscription_item_id: plan.metered, quantity: 1, idempotency_key: key });
    } else {
      stream.keyless++;
      await reporter.report({ subscription_item_id: plan.metered, quantity: 0.5, timestamp: marker });
    }
    if (n % perTick === perTick - 1) await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  await fault;
  return stream;
}

/**
 * Every event of the stream counted exactly once in Postgres `usage_events` (once the sinks caught
 * up), or handed to onRejected: each caller key once, the keyless events by count at their
 * marker, nothing of the refused ones, and onRejected got exactly those.
 */
export async function expectExactlyOnce(
  db: Queryable,
  orgId: number,
  metered: number,
  stream: ReportedStream,
  rejections: UsageRejection[],
  timeoutMs = 60_000,
): Promise<void> {
  const label = stream.keys[0]!.slice(0, stream.keys[0]!.lastIndexOf('-'));
  await eventually(async () => {
    const { rows } = await db.query<{ key: string; n: number }>(
      `SELECT idempotency_key AS key, count(*)::int AS n FROM usage_events
        WHERE org_id = $1 AND idempotency_key = ANY($2::text[]) GROUP BY 1`,
      [orgId, [...stream.keys, ...stream.refused]],
    );
    const counts = new Map(rows.map((row) => [row.key, row.n]));
    const missing = stream.keys.filter((key) => counts.get(key) !== 1);
    expect(missing, `${missing.length} of ${stream.keys.length} keys of ${label} not stored once`).toEqual(
      [],
    );
    expect(stream.refused.filter((key) => counts.has(key))).toEqual([]);
    const { rows: keyless } = await db.query<{ n: number; keys: number }>(
      `SELECT count(*)::int AS n, count(DISTINCT idempotency_key)::int AS keys FROM usage_events
        WHERE org_id = $1 AND subscription_item_id = $2 AND occurred_at = $3`,
      [orgId, metered, stream.marker],
    );
    expect(keyless[0]).toEqual({ n: stream.keyless, keys: stream.keyless });
  }, timeoutMs);
  expect(rejections.map((r) => r.event.idempotency_key).sort()).toEqual([...stream.refused].sort());
  for (const { error } of rejections) {
    expect(error).toMatchObject({ status: 400, error_code: 'BAD_REQUEST' });
    expect(error.request_id).toMatch(/^[0-9a-f-]{36}$/);
  }
}

/**
 * That no request started while the service had asked to wait: after an answer with
 * `Retry-After`, the next request starts no earlier than the time it named.
 */
export function expectRetryAfterHonoured(exchanges: Exchange[]): void {
  const waits = exchanges
    .filter((e) => e.retryAfter !== null && /^\d+$/.test(e.retryAfter))
    .map((e) => ({ from: e.answeredAt, until: e.answeredAt + Number(e.retryAfter) * 1000 }));
  // a few ms of timer slack; requests already running when the answer came are not "started"
  const early = exchanges.filter((e) => waits.some((w) => e.startedAt > w.from && e.startedAt < w.until - 5));
  expect(early, 'requests started before Retry-After allowed').toEqual([]);
}
