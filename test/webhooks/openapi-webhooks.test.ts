import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMITTED_EVENT_TYPES, WebhookDeliveryHeaders } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg } from '../helpers/fixtures.js';

interface WebhookOperation {
  operationId: string;
  summary: string;
  security: unknown[];
  parameters: { name: string; in: string; required: boolean; schema: Record<string, unknown> }[];
  requestBody: { required: boolean; content: Record<string, { schema: { $ref: string } }> };
  responses: Record<string, unknown>;
}

interface Document {
  paths: Record<
    string,
    Record<string, { requestBody?: { required: boolean }; responses: Record<string, unknown> }>
  >;
  webhooks: Record<string, { post: WebhookOperation }>;
  components: { schemas: Record<string, { properties?: Record<string, Record<string, unknown>> }> };
}

/** The OpenAPI 3.1 `webhooks` section and the new routes, as /openapi.json and /llms.txt serve them. */
describe('webhooks in the OpenAPI document', () => {
  let api: TestApi;
  let document: Document;
  let llms: string;

  beforeAll(async () => {
    api = await startTestApi();
    const org = await createTestOrg(api.platform.db);
    document = (await api.request({ path: '/openapi.json', key: org.apiKey })).json();
    llms = (await api.request({ path: '/llms.txt' })).body;
  });
  afterAll(() => api?.close());

  it('describes each emitted event type: its payload schema and the delivery headers', () => {
    expect(Object.keys(document.webhooks).sort()).toEqual([...EMITTED_EVENT_TYPES].sort());
    const headerNames = Object.keys(WebhookDeliveryHeaders.shape);
    expect(headerNames).toEqual(
      expect.arrayContaining(['x-service-signature', 'webhook-id', 'webhook-timestamp', 'webhook-signature']),
    );
    for (const [type, { post }] of Object.entries(document.webhooks)) {
      expect(post.security, type).toEqual([]);
      expect(post.requestBody.required, type).toBe(true);
      const ref = post.requestBody.content['application/json']!.schema.$ref;
      const payload = document.components.schemas[ref.replace('#/components/schemas/', '')];
      expect(payload, type).toBeDefined();
      expect(Object.keys(payload!.properties!).sort(), type).toEqual(['created', 'data', 'id', 'type']);
      expect(payload!.properties!.type, type).toMatchObject({ const: type });
      const dataRef = String(payload!.properties!.data!.$ref).replace('#/components/schemas/', '');
      expect(document.components.schemas[dataRef], type).toBeDefined();
      expect(
        post.parameters.map((p) => p.name),
        type,
      ).toEqual(headerNames);
      for (const parameter of post.parameters) {
        expect(parameter, `${type} ${parameter.name}`).toMatchObject({ in: 'header', required: true });
      }
      expect(Object.keys(post.responses), type).toEqual(['2XX']);
    }
    const signature = document.webhooks['invoice.paid']!.post.parameters.find(
      (p) => p.name === 'webhook-signature',
    );
    expect(signature!.schema.pattern).toBeDefined();
  });

  it('gives the invoice events the invoice fields the contract names, from the Invoice schema', () => {
    const data = document.components.schemas.WebhookInvoiceData!;
    expect(Object.keys(data.properties!).sort()).toEqual(
      ['balance', 'currency', 'customer_id', 'id', 'invoice_number', 'object', 'status', 'total'].sort(),
    );
    expect(data.properties!.total).toEqual(document.components.schemas.PublicInvoice!.properties!.total);
  });

  it('documents rotate-secret (body optional) and recover (202), and stays a valid OpenAPI 3.1 document', async () => {
    const rotate = document.paths['/webhook-endpoints/{endpoint_id}/rotate-secret']!.post!;
    expect(rotate.requestBody!.required).toBe(false);
    expect(Object.keys(rotate.responses)).toEqual(expect.arrayContaining(['200', '404', '422']));
    const recover = document.paths['/webhook-endpoints/{endpoint_id}/recover']!.post!;
    expect(recover.requestBody!.required).toBe(true);
    expect(Object.keys(recover.responses)).toEqual(expect.arrayContaining(['202', '404', '409', '422']));
    // no other operation lost its required body
    const create = document.paths['/webhook-endpoints']!.post!;
    expect(create.requestBody!.required).toBe(true);
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
  });

  it('lists the webhooks and the new routes in llms.txt', () => {
    expect(llms).toMatch(/^## Webhooks$/m);
    for (const type of EMITTED_EVENT_TYPES) expect(llms).toContain(`- [${type}](`);
    expect(llms).toContain('[POST /webhook-endpoints/{endpoint_id}/rotate-secret]');
    expect(llms).toContain('[POST /webhook-endpoints/{endpoint_id}/recover]');
    expect(llms).toContain('webhook-signature');
  });
});
