import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';

// biome-ignore lint/suspicious/noExplicitAny: the document is walked field by field
let document: any;
let api: TestApi;

beforeAll(async () => {
  api = await startTestApi();
  const org = await createTestOrg(api.platform.db);
  document = (await api.request({ path: '/openapi.json', key: org.apiKey })).json();
});
afterAll(() => api?.close());

/** The usage routes in the OpenAPI document, generated from the same zod schemas the core uses. */
describe('usage routes in the OpenAPI document', () => {
  it('documents POST /usage/events with its header, body, event and errors', () => {
    const operation = document.paths['/usage/events'].post;
    expect(operation.operationId).toBe('createUsageEvent');
    expect(operation.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ in: 'header', name: 'idempotency-key' })]),
    );
    expect(JSON.stringify(operation.requestBody)).toContain(
      '#/components/schemas/CreateUsageEventRequestInput',
    );
    expect(JSON.stringify(operation.responses['201'])).toContain('#/components/schemas/PublicUsageEvent');
    expect(Object.keys(operation.responses)).toEqual(
      expect.arrayContaining(['400', '401', '404', '413', '415', '422', '429', '503']),
    );
  });

  it('documents the batch route with its request, per-event results and limit', () => {
    const operation = document.paths['/usage/events/batch'].post;
    expect(operation.operationId).toBe('createUsageEventBatch');
    expect(JSON.stringify(operation.requestBody)).toContain(
      '#/components/schemas/CreateUsageEventBatchRequestInput',
    );
    expect(JSON.stringify(operation.responses['200'])).toContain(
      '#/components/schemas/UsageEventBatchResult',
    );
    const request = document.components.schemas.CreateUsageEventBatchRequestInput;
    expect(request.properties.events).toMatchObject({ minItems: 1, maxItems: 1000 });
    expect(request.properties.events.items.required).toEqual(
      expect.arrayContaining(['subscription_item_id', 'quantity', 'idempotency_key']),
    );
    expect(document.components.schemas.UsageEventBatchItemResult.properties).toHaveProperty('error');
  });
});
