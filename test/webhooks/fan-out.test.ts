import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fanOutOutbox } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { emit, registerEndpoint, storedEvents } from './support.js';

describe('outbox fan-out', () => {
  let api: TestApi;
  let org: TestOrg;

  beforeAll(async () => {
    api = await startTestApi();
    org = await createTestOrg(api.platform.db);
  });
  afterAll(() => api?.close());

  const createEndpoint = async (path: string) => {
    const response = await api.request({
      method: 'POST',
      path: '/webhook-endpoints',
      key: org.apiKey,
      payload: { url: `http://127.0.0.1:9/${path}`, events: ['invoice.*'] },
    });
    expect(response.statusCode).toBe(201);
    return response.json().data.id as string;
  };
  const fanOut = () => fanOutOutbox(api.platform.db, { batchSize: 100, maxAttempts: 1 });

  it('sends an event only to the endpoints that existed when it happened, however late the fan-out', async () => {
    const early = await createEndpoint('early');
    await emit(api.platform.db, org.orgId, 'invoice.posted', { id: 'before-late', object: 'invoice' });
    // registered after the event, before the dispatcher got to it
    const late = await createEndpoint('late');
    await fanOut();
    expect((await storedEvents(api.platform.db, early)).map((e) => e.event_type)).toEqual(['invoice.posted']);
    expect(await storedEvents(api.platform.db, late)).toEqual([]);

    await emit(api.platform.db, org.orgId, 'invoice.paid', { id: 'after-late', object: 'invoice' });
    await fanOut();
    expect((await storedEvents(api.platform.db, late)).map((e) => e.event_type)).toEqual(['invoice.paid']);
    expect(await storedEvents(api.platform.db, early)).toHaveLength(2);
  });

  it("gives an endpoint only its own organization's events, however many organizations share a batch", async () => {
    const mine = await createEndpoint('mine');
    const neighbour = await createTestOrg(api.platform.db);
    const theirs = (
      await registerEndpoint(api, neighbour.apiKey, {
        url: 'http://127.0.0.1:9/neighbour',
        events: ['invoice.*'],
      })
    ).id;
    await emit(api.platform.db, org.orgId, 'invoice.posted', { id: 'mine', object: 'invoice' });
    await emit(api.platform.db, neighbour.orgId, 'invoice.paid', { id: 'theirs', object: 'invoice' });
    await fanOut();
    expect((await storedEvents(api.platform.db, mine)).map((e) => e.event_type)).toEqual(['invoice.posted']);
    expect((await storedEvents(api.platform.db, theirs)).map((e) => e.event_type)).toEqual(['invoice.paid']);
  });

  it('counts only the webhook events it created: an outbox row fanned out twice adds none', async () => {
    const alone = await createTestOrg(api.platform.db);
    const twice = (
      await registerEndpoint(api, alone.apiKey, { url: 'http://127.0.0.1:9/twice', events: ['invoice.*'] })
    ).id;
    await emit(api.platform.db, alone.orgId, 'invoice.posted', { id: 'fanned-twice', object: 'invoice' });
    expect(await fanOut()).toEqual({ outboxRows: 1, webhookEvents: 1 });
    // as if the row had been read again (UNIQUE (outbox_id, endpoint_id) stops the repeat)
    await api.platform.db.query('UPDATE outbox SET processed_at = NULL WHERE org_id = $1', [alone.orgId]);
    expect(await fanOut()).toEqual({ outboxRows: 1, webhookEvents: 0 });
    expect(await storedEvents(api.platform.db, twice)).toHaveLength(1);
  });

  it('marks processed the events that no endpoint receives, so no batch reads them again', async () => {
    await createEndpoint('invoices-only');
    const unsubscribed = await emit(api.platform.db, org.orgId, 'subscription.created', {
      id: 'unwanted',
      object: 'subscription',
    });
    const lonely = await createTestOrg(api.platform.db);
    const noEndpoint = await emit(api.platform.db, lonely.orgId, 'invoice.paid', {
      id: 'nobody-listens',
      object: 'invoice',
    });
    await fanOut();
    // left unprocessed, they would fill every batch once there are batchSize of them
    const { rows } = await api.platform.db.query<{ id: string; processed: boolean }>(
      'SELECT id::text, processed_at IS NOT NULL AS processed FROM outbox WHERE id = ANY($1::bigint[]) ORDER BY id',
      [[unsubscribed, noEndpoint]],
    );
    expect(rows).toEqual([
      { id: String(unsubscribed), processed: true },
      { id: String(noEndpoint), processed: true },
    ]);
    expect(await fanOut()).toEqual({ outboxRows: 0, webhookEvents: 0 });
  });

  it('fans out the oldest outbox rows first when more are waiting than one batch holds', async () => {
    const owner = await createTestOrg(api.platform.db);
    const endpoint = (
      await registerEndpoint(api, owner.apiKey, { url: 'http://127.0.0.1:9/oldest', events: ['invoice.*'] })
    ).id;
    const first = await emit(api.platform.db, owner.orgId, 'invoice.posted', {
      id: 'first',
      object: 'invoice',
    });
    await emit(api.platform.db, owner.orgId, 'invoice.paid', { id: 'second', object: 'invoice' });
    // the first row rewritten since (as any update does): stored after the second, still the older
    await api.platform.db.query('UPDATE outbox SET data = data WHERE id = $1', [first]);
    const oneByOne = () => fanOutOutbox(api.platform.db, { batchSize: 1, maxAttempts: 1 });
    expect(await oneByOne()).toEqual({ outboxRows: 1, webhookEvents: 1 });
    expect((await storedEvents(api.platform.db, endpoint)).map((e) => e.event_type)).toEqual([
      'invoice.posted',
    ]);
    expect(await oneByOne()).toEqual({ outboxRows: 1, webhookEvents: 1 });
    expect((await storedEvents(api.platform.db, endpoint)).map((e) => e.event_type)).toEqual([
      'invoice.posted',
      'invoice.paid',
    ]);
  });

  it('dates the payload when the event happened, and counts an endpoint made at that instant as existing', async () => {
    const endpoint = await createEndpoint('same-instant');
    const outboxId = await emit(api.platform.db, org.orgId, 'invoice.paid', { id: 'old', object: 'invoice' });
    // the event happened an hour before the fan-out; the endpoint was made at that very instant
    const { rows } = await api.platform.db.query<{ created_at: Date }>(
      `UPDATE outbox SET created_at = date_trunc('milliseconds', created_at) - interval '1 hour'
        WHERE id = $1 RETURNING created_at`,
      [outboxId],
    );
    const happenedAt = rows[0]!.created_at;
    await api.platform.db.query('UPDATE webhook_endpoints SET created_at = $2 WHERE id = $1', [
      endpoint,
      happenedAt,
    ]);
    await fanOut();
    const [event] = await storedEvents(api.platform.db, endpoint);
    expect(JSON.parse(event!.payload)).toMatchObject({
      type: 'invoice.paid',
      created: Math.floor(happenedAt.getTime() / 1000),
      data: { id: 'old', object: 'invoice' },
    });
  });
});
