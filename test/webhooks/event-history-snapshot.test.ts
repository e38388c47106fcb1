import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { getWebhookEvent } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';

let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

it("shows an event's summary and its attempt history from one moment, even while an attempt is recorded", async () => {
  const { db } = api.platform;
  const org = await createTestOrg(db);
  const one = async (sql: string, values: unknown[]) => (await db.query(sql, values)).rows[0]!;
  const endpoint = await one(
    `INSERT INTO webhook_endpoints (org_id, url, events, secret) VALUES ($1, 'https://example.com/h', '{invoice.*}', 'whsec_x')
     RETURNING id`,
    [org.orgId],
  );
  const outbox = await one(
    `INSERT INTO outbox (org_id, event_type, data) VALUES ($1, 'invoice.posted', '{}') RETURNING id`,
    [org.orgId],
  );
  const event = await one(
    `INSERT INTO webhook_events (org_id, endpoint_id, outbox_id, event_type, payload, status, attempts)
     VALUES ($1, $2, $3, 'invoice.posted', '{}', 'RETRYING', 1) RETURNING id`,
    [org.orgId, endpoint.id, outbox.id],
  );
  await one(
    `INSERT INTO webhook_attempts (org_id, webhook_event_id, attempt, attempted_at, response_code, duration_ms)
     VALUES ($1, $2, 1, now(), 500, 12) RETURNING id`,
    [org.orgId, event.id],
  );

  // The dispatcher records the second attempt while the read is under way: the history table is
  // held until that transaction commits, so a read made of two statements would see the event
  // before it and the history after it.
  const dispatcher = new pg.Client({ connectionString: api.config.DATABASE_URL });
  await dispatcher.connect();
  try {
    await dispatcher.query('BEGIN');
    await dispatcher.query('LOCK TABLE webhook_attempts IN ACCESS EXCLUSIVE MODE');
    const read = getWebhookEvent(db, org.orgId, event.id);
    for (;;) {
      const { rows } = await dispatcher.query(
        `SELECT count(*)::int AS waiting FROM pg_locks WHERE relation = 'webhook_attempts'::regclass AND NOT granted`,
      );
      if (rows[0].waiting > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await dispatcher.query(
      `INSERT INTO webhook_attempts (org_id, webhook_event_id, attempt, attempted_at, response_code, duration_ms)
       VALUES ($1, $2, 2, now(), 204, 9)`,
      [org.orgId, event.id],
    );
    await dispatcher.query(
      `UPDATE webhook_events SET attempts = 2, status = 'SUCCESS', last_response_code = 204 WHERE id = $1`,
      [event.id],
    );
    await dispatcher.query('COMMIT');

    const shown = await read;
    expect(shown).toMatchObject({ attempts: 2, status: 'SUCCESS' });
    expect(shown.attempt_history.map((attempt) => attempt.response_code)).toEqual([500, 204]);
  } finally {
    await dispatcher.end();
  }
});
