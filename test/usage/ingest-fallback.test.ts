import { beforeAll, describe, expect, it } from 'vitest';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createUsageItems, INGEST_LISTENING, serviceProcesses, type UsageItems } from './support.js';

/** The ingest service process on the JS fallback of uWebSockets.js (UWS_USE_FALLBACK=1). */
describe('ingest service process', () => {
  const processes = serviceProcesses('ingest_process');
  let org: TestOrg;
  let items: UsageItems;

  beforeAll(async () => {
    org = await createTestOrg(processes.database.db);
    items = await createUsageItems(processes.database.db, org.orgId);
  });

  it('works on the JS fallback of uWebSockets.js too', async () => {
    // Embedded twins here: memory store, in-process log writing to this database.
    const ingest = await processes.start(
      'services/ingest/main.ts',
      processes.env({ INGEST_PORT: '0', INGEST_TRUSTED_PROXY: 'true', UWS_USE_FALLBACK: '1' }),
      INGEST_LISTENING,
    );
    try {
      expect(ingest.output()).toContain('fallback');
      const base = `http://127.0.0.1:${ingest.match[1]}`;
      const post = (body: unknown, key?: string) =>
        fetch(`${base}/api/public/v1/usage/events`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${org.apiKey}`,
            'content-type': 'application/json',
            ...(key ? { 'idempotency-key': key } : {}),
          },
          body: JSON.stringify(body),
        });
      const created = await post({ subscription_item_id: items.metered, quantity: 3 }, 'fallback-1');
      expect(created.status).toBe(201);
      const event = ((await created.json()) as { data: unknown }).data;
      const again = await post({ subscription_item_id: items.metered, quantity: 4 }, 'fallback-1');
      expect(((await again.json()) as { data: unknown }).data).toEqual(event);
      const missingKey = await post({ subscription_item_id: items.metered, quantity: 3 });
      expect(missingKey.status).toBe(400);
      expect(missingKey.headers.get('x-request-id')).toBe(
        ((await missingKey.json()) as { request_id: string }).request_id,
      );
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      expect((await fetch(`${base}/nowhere`)).status).toBe(404);
      const { rows } = await processes.database.db.query(
        'SELECT id FROM usage_events WHERE idempotency_key = $1',
        ['fallback-1'],
      );
      expect(rows).toEqual([{ id: (event as { id: string }).id }]);
    } finally {
      expect(await ingest.stop()).toBe(0);
    }
  });
});
