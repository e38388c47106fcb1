import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dedupKey, encodeDedupRecord } from '../../libs/usage/domain/event.js';
import { openUsageIngest, type UsagePipeline } from '../../libs/usage/index.js';
import type { IngestServer } from '../../services/ingest/server.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import {
  createUsageItems,
  eventually,
  freshKey,
  startIngestFor,
  startUsageStack,
  type UsageFrontEnd,
  type UsageItems,
  type UsageStack,
  usageRows,
  uwsFrontEnd,
} from './support.js';

/**
 * Ingest runs as several processes on one Redis and one topic. A process knows only its own
 * requests in flight; these are the cases where a repeated key meets a record another process
 * wrote: one still appending, one that answered long ago, one that died before appending.
 */
describe('usage ingest as two processes on one Redis and one topic', () => {
  let stack: UsageStack;
  let second: UsagePipeline;
  let secondServer: IngestServer;
  let org: TestOrg;
  let items: UsageItems;
  let processes: UsageFrontEnd[];

  beforeAll(async () => {
    stack = await startUsageStack('redis+kafka', { sinks: true });
    // A second ingest core on the same platform: its own requests in flight and its own producer.
    second = await openUsageIngest(stack.api.platform);
    secondServer = await startIngestFor(stack.api, second, { logName: 'ingest-2' });
    processes = [stack.frontEnds.find((f) => f.name === 'uws')!, uwsFrontEnd(secondServer.port)];
    org = await createTestOrg(stack.api.platform.db);
    items = await createUsageItems(stack.api.platform.db, org.orgId);
  });
  afterAll(async () => {
    await secondServer?.close();
    await second?.close();
    await stack?.close();
  });

  const post = (process: UsageFrontEnd, idempotencyKey: string, quantity: number) =>
    process.post('/usage/events', {
      key: org.apiKey,
      idempotencyKey,
      body: { subscription_item_id: items.metered, quantity },
    });
  const storedWithKey = async (key: string) =>
    (await usageRows(stack.api.platform.db, org.orgId)).filter((row) => row.idempotency_key === key);

  it('creates ONE event for 50 concurrent requests with one key spread over both: 50 identical ids', async () => {
    const key = freshKey('two-processes');
    const responses = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post(processes[i % 2]!, key, i + 1)),
    );
    expect(responses.map((r) => r.status)).toEqual(new Array(50).fill(201));
    const ids = new Set(responses.map((r) => r.body.data.id));
    expect(ids.size).toBe(1);
    expect(new Set(responses.map((r) => r.body.data.quantity)).size).toBe(1);
    await eventually(async () => expect((await storedWithKey(key)).map((row) => row.id)).toEqual([...ids]));
  });

  it("answers a repeat on the other process with the first one's event, stored once", async () => {
    const key = freshKey('repeat-elsewhere');
    const first = await post(processes[0]!, key, 2);
    const repeat = await post(processes[1]!, key, 5);
    expect([first.status, repeat.status]).toEqual([201, 201]);
    expect(repeat.body.data).toEqual(first.body.data);
    await eventually(async () =>
      expect(await storedWithKey(key)).toEqual([
        expect.objectContaining({ id: first.body.data.id, quantity: '2.00000000' }),
      ]),
    );
  });

  it('completes the event of a process that died after reserving its key and before the log had it', async () => {
    const key = freshKey('owner-died');
    const orphan = {
      id: randomUUID(),
      orgId: org.orgId,
      subscriptionItemId: items.metered,
      idempotencyKey: key,
      quantity: '7',
      occurredAtMs: Date.parse('2026-11-20T10:00:00.000Z'),
      recordedAtMs: Date.parse('2026-11-20T10:00:00.500Z'),
    };
    // What the dead process left: its reservation, and nothing in the log.
    await stack.api.platform.redis!.set(
      dedupKey(stack.api.config.REDIS_KEY_PREFIX, org.orgId, items.metered, key),
      encodeDedupRecord('pending', orphan),
      'EX',
      3600,
    );
    const retry = await post(processes[1]!, key, 3);
    expect(retry.status).toBe(201);
    // The one event of this key, whatever the new body says: never a second id for one identity.
    expect(retry.body.data).toMatchObject({
      id: orphan.id,
      quantity: 7,
      timestamp: '2026-11-20T10:00:00.000Z',
      recorded_at: '2026-11-20T10:00:00.500Z',
    });
    const again = await post(processes[0]!, key, 4);
    expect(again.body.data).toEqual(retry.body.data);
    // Appended by the retry and acknowledged: committed, so later repeats answer from Redis.
    const record = await stack.api.platform.redis!.get(
      dedupKey(stack.api.config.REDIS_KEY_PREFIX, org.orgId, items.metered, key),
    );
    expect(record?.startsWith(`C|${orphan.id}|7|`)).toBe(true);
    await eventually(async () =>
      expect(await storedWithKey(key)).toEqual([
        expect.objectContaining({ id: orphan.id, quantity: '7.00000000' }),
      ]),
    );
  });
});
