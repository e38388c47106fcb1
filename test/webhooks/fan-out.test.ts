import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fanOutOutbox } from '../../libs/webhooks/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { emit, storedEvents } from './support.js';

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
});
