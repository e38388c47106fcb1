import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openUsageIngest } from '../../libs/usage/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { createUsageItems, freshKey, type UsageItems } from './support.js';

/**
 * The embedded mode keeps its dedup store in memory, so a restart forgets every key; Postgres does
 * not. A second pipeline on the same database is that restart.
 */
describe('usage in the embedded mode, after a restart', () => {
  let api: TestApi;
  let org: TestOrg;
  let items: UsageItems;

  beforeAll(async () => {
    api = await startTestApi({ redis: false });
    org = await createTestOrg(api.platform.db);
    items = await createUsageItems(api.platform.db, org.orgId);
  });
  afterAll(() => api?.close());

  it('answers a repeated key with the stored event, whatever the new body says', async () => {
    const auth = await api.platform.authenticator.authenticate(`Bearer ${org.apiKey}`);
    const key = freshKey('restart');
    const first = await api.usage.ingest.recordEvent(auth, {
      body: { subscription_item_id: items.metered, quantity: 2 },
      idempotencyKey: key,
    });
    expect(first.value.deduplicated).toBe(false);

    const restarted = await openUsageIngest(api.platform);
    try {
      for (const body of [
        { subscription_item_id: items.metered, quantity: -5 },
        { subscription_item_id: items.metered, quantity: 'three', extra: true },
        { subscription_item_id: items.metered, quantity: 4 },
      ]) {
        const repeat = await restarted.ingest.recordEvent(auth, { body, idempotencyKey: key });
        expect(repeat.value, JSON.stringify(body)).toEqual({ event: first.value.event, deduplicated: true });
      }
      // A key never recorded still gets the body's error.
      await expect(
        restarted.ingest.recordEvent(auth, {
          body: { subscription_item_id: items.metered, quantity: -5 },
          idempotencyKey: freshKey('never'),
        }),
      ).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    } finally {
      await restarted.close();
    }
    const { rows } = await api.platform.db.query('SELECT id FROM usage_events WHERE idempotency_key = $1', [
      key,
    ]);
    expect(rows).toEqual([{ id: first.value.event.id }]);
  });
});
