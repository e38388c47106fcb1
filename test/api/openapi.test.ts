import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BASE_PATH, INVOICE_STATUSES } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';

/** Component schemas the contract names; one line per public object. */
const REQUIRED_SCHEMAS = [
  'PublicCustomer',
  'PublicProduct',
  'PublicSubscription',
  'PublicInvoice',
  'PublicInvoiceTransaction',
  'PublicUsageEvent',
  'PublicWebhookEndpoint',
  'PublicWebhookEvent',
  'Error',
];

/** Operations served without a key (docs/architecture.md, "Rules of the contract"): everything else needs bearerAuth. */
const PUBLIC_OPERATIONS = new Set(['getMeta', 'getLlmsTxt']);

/**
 * MCP answers a message it cannot take with a JSON-RPC error (400), never a 422 (spec "MCP
 * endpoint"); its HTTP-level errors (401, 413, 415, 429) are the usual Error body.
 */
const JSON_RPC_OPERATIONS = new Set(['postMcp']);

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

interface Operation {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: Record<string, string[]>[];
  parameters?: { name: string; in: string; required?: boolean; schema?: unknown }[];
  requestBody?: unknown;
  responses?: Record<string, { content?: Record<string, { schema?: { $ref?: string } }> }>;
}

interface Document {
  openapi: string;
  servers: { url: string }[];
  security: Record<string, string[]>[];
  paths: Record<string, Partial<Record<(typeof METHODS)[number], Operation>>>;
  components: { schemas: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}

let api: TestApi;
let org: TestOrg;
let document: Document;

beforeAll(async () => {
  api = await startTestApi();
  org = await createTestOrg(api.platform.db);
  const response = await api.request({
    path: '/openapi.json',
    key: org.apiKey,
    headers: { host: 'billing.test' },
  });
  expect(response.statusCode).toBe(200);
  document = response.json();
});
afterAll(() => api?.close());

function operations(): { path: string; method: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.filter((method) => item[method]).map((method) => ({ path, method, operation: item[method]! })),
  );
}

describe('GET /openapi.json', () => {
  it('needs the API key like every endpoint but /meta', async () => {
    const response = await api.request({ path: '/openapi.json' });
    expect(response.statusCode).toBe(401);
  });

  it('links to itself at the address reached when the Host header cannot be part of a URL', async () => {
    for (const host of ['a"b<c>', 'evil.example/path?']) {
      const meta = await api.request({ path: '/meta', headers: { host } });
      expect(meta.statusCode, host).toBe(200);
      const link = new URL(meta.json().data.openapi_url);
      expect(link.host, host).not.toBe('');
      expect(link.pathname, host).toBe(`${BASE_PATH}/openapi.json`);
      expect(meta.body, host).not.toContain(host);
    }
  });

  it('is a valid OpenAPI 3.1 document (swagger-parser)', async () => {
    expect(document.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();
  });

  it('names the base path in servers and lists paths relative to it', () => {
    expect(document.servers).toEqual([{ url: `http://billing.test${BASE_PATH}` }]);
    const paths = Object.keys(document.paths);
    expect(paths.length).toBeGreaterThan(10);
    for (const path of paths) {
      expect(path.startsWith('/'), path).toBe(true);
      expect(path.startsWith(BASE_PATH), path).toBe(false);
      expect(path, 'operations routes stay out').not.toMatch(/healthz|readyz|metrics/);
    }
    for (const path of [
      '/customers',
      '/customers/{customer_id}',
      '/products',
      '/products/{product_id}',
      '/subscriptions',
      '/subscriptions/{subscription_id}',
      '/invoices',
      '/invoices/{invoice_id}',
      '/invoices/{invoice_id}/html',
      '/invoices/{invoice_id}/pdf',
      '/invoices/{invoice_id}/transactions',
      '/meta',
      '/openapi.json',
    ]) {
      expect(paths, path).toContain(path);
    }
  });

  it('declares the bearerAuth HTTP bearer scheme, applied globally, public operations excepted', () => {
    expect(document.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(document.security).toEqual([{ bearerAuth: [] }]);
    for (const { path, operation } of operations()) {
      if (PUBLIC_OPERATIONS.has(operation.operationId ?? '')) {
        expect(operation.security, path).toEqual([]);
      } else {
        // absent means the global requirement applies
        expect(operation.security ?? document.security, path).toEqual([{ bearerAuth: [] }]);
      }
    }
  });

  it('gives every operation an id, a summary, a tag, its parameters and its responses', () => {
    const ids = new Set<string>();
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(operation.operationId, where).toMatch(/^[a-z][A-Za-z]+$/);
      expect(ids.has(operation.operationId!), `${where}: duplicate operationId`).toBe(false);
      ids.add(operation.operationId!);
      expect(operation.summary, where).toBeTruthy();
      expect(operation.tags?.length, where).toBeGreaterThan(0);

      const declared = (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      expect(declared.sort(), `${where}: path parameters`).toEqual(templated.sort());
      for (const parameter of operation.parameters ?? []) {
        expect(parameter.schema, `${where}: ${parameter.name} schema`).toBeDefined();
        if (parameter.in === 'path') expect(parameter.required, `${where}: ${parameter.name}`).toBe(true);
      }

      const statuses = Object.keys(operation.responses ?? {});
      expect(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where}: a success response`,
      ).toBe(true);
    }
  });

  it('documents the error responses each operation can give, with the Error schema', () => {
    const missing: string[] = [];
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      const responses = operation.responses ?? {};
      const statuses = Object.keys(responses);
      const jsonRpc = JSON_RPC_OPERATIONS.has(operation.operationId ?? '');
      const expected: string[] = [];
      if (!PUBLIC_OPERATIONS.has(operation.operationId ?? '')) expected.push('401', '429');
      if (/\{\w+\}/.test(path)) expected.push('404');
      const hasInput = (operation.parameters ?? []).some((p) => p.in === 'query') || operation.requestBody;
      if (hasInput && !jsonRpc) expected.push('422');
      // a JSON body can be malformed (400), of another media type (415) or too large (413)
      if (operation.requestBody) expected.push('400', '413', '415');
      for (const status of expected) if (!statuses.includes(status)) missing.push(`${where}: ${status}`);
      for (const status of statuses.filter((s) => /^[45]\d\d$/.test(s))) {
        const errorSchema = jsonRpc && status === '400' ? 'JsonRpcResponse' : 'Error';
        const schema = responses[status]!.content?.['application/json']?.schema?.$ref;
        if (schema !== `#/components/schemas/${errorSchema}`)
          missing.push(`${where}: ${status} body ${schema}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('pages every list operation with limit and offset', () => {
    for (const { path, operation } of operations()) {
      const success = operation.responses?.['200']?.content?.['application/json']?.schema as
        | { properties?: Record<string, unknown> }
        | undefined;
      if (!success?.properties?.pagination) continue;
      const query = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      expect(query, path).toEqual(expect.arrayContaining(['limit', 'offset']));
    }
  });

  it.each(REQUIRED_SCHEMAS)('has the component schema %s', (name) => {
    expect(document.components.schemas[name], name).toBeDefined();
  });

  it('describes the public objects from the same zod schemas the routes serialize with', () => {
    const customer = document.components.schemas.PublicCustomer as {
      properties: Record<string, unknown>;
      required: string[];
    };
    expect(customer.properties).not.toHaveProperty('notes');
    expect(customer.required).toEqual(expect.arrayContaining(['id', 'object', 'name', 'credit_balance']));
    const invoice = document.components.schemas.PublicInvoice as {
      properties: Record<string, { enum?: string[] }>;
    };
    expect(invoice.properties.status!.enum).toEqual([...INVOICE_STATUSES]);
    const pdf = document.paths['/invoices/{invoice_id}/pdf']!.get!;
    expect(pdf.responses!['200']!.content).toHaveProperty('application/pdf');
    expect(pdf.responses!['200']).toMatchObject({
      headers: { 'Content-Disposition': { schema: { type: 'string' } } },
    });
    const html = document.paths['/invoices/{invoice_id}/html']!.get!;
    expect(html.responses!['200']!.content).toHaveProperty('text/html');
    const customerId = document.paths['/customers/{customer_id}']!.get!.parameters![0]!;
    expect(customerId.schema).toMatchObject({ type: 'integer', minimum: 1 });
  });
});
