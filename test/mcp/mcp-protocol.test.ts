import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type ListeningApi, startListeningApi } from './mcp-server.js';

/** Raw HTTP as curl sends it (`Accept: application/json` only): every status and JSON-RPC code. */

let api: ListeningApi;
let org: TestOrg;

beforeAll(async () => {
  api = await startListeningApi();
  org = await createTestOrg(api.platform.db);
});
afterAll(() => api?.close());

const post = (body: string | object, headers?: Record<string, string>) =>
  api.postMcp(body, { key: org.apiKey, ...(headers ? { headers } : {}) });

// biome-ignore lint/suspicious/noExplicitAny: the assertions walk into arbitrary JSON-RPC bodies
type Json = any;

async function rpc(body: string | object, expectedStatus = 200): Promise<Json> {
  const response = await post(body);
  expect(response.status).toBe(expectedStatus);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  return response.json();
}

describe('MCP endpoint over plain HTTP', () => {
  it('initialize: server info, tools capability, and the requested protocol version when supported', async () => {
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      const body = await rpc({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'curl', version: '8' } },
      });
      expect(body).toEqual({
        jsonrpc: '2.0',
        id: 1,
        result: {
          protocolVersion: version,
          capabilities: { tools: { listChanged: false } },
          serverInfo: { name: 'billing-public-api', title: expect.any(String), version: '2026-11-20' },
          instructions: expect.any(String),
        },
      });
    }
  });

  it('initialize: an unknown protocol version gets the latest supported one', async () => {
    const body = await rpc({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '1999-01-01' },
    });
    expect(body.id).toBe('init');
    expect(body.result.protocolVersion).toBe('2025-11-25');
  });

  it('initialize: params that are not an object are -32602, with the request id', async () => {
    const body = await rpc({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: ['2025-11-25'] });
    expect(body).toMatchObject({ jsonrpc: '2.0', id: 'init', error: { code: -32602 } });
    expect(body.result).toBeUndefined();
  });

  it('answers any notification, notifications/initialized included, with 202 and no body', async () => {
    for (const method of ['notifications/initialized', 'notifications/cancelled', 'notifications/whatever']) {
      const response = await post({ jsonrpc: '2.0', method });
      expect(response.status).toBe(202);
      expect(await response.text()).toBe('');
      expect(response.headers.get('content-type')).toBeNull();
    }
  });

  it('answers ping with an empty result and keeps a string id', async () => {
    expect(await rpc({ jsonrpc: '2.0', id: 'p-1', method: 'ping' })).toEqual({
      jsonrpc: '2.0',
      id: 'p-1',
      result: {},
    });
  });

  it('lists the tools', async () => {
    const body = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    expect(body.result.tools).toHaveLength(13);
  });

  it('-32700 when the body is not JSON (from the MCP route, not the REST 400)', async () => {
    for (const text of ['{"jsonrpc": "2.0", "id": 1, "method": ', 'not json', '']) {
      const body = await rpc(text, 400);
      expect(body).toEqual({
        jsonrpc: '2.0',
        id: null,
        error: { code: -32700, message: expect.any(String) },
      });
    }
  });

  it('-32600 when the message is not a JSON-RPC 2.0 request object', async () => {
    const cases: [unknown, string | number | null][] = [
      [{ id: 1, method: 'ping' }, 1], // no jsonrpc
      [{ jsonrpc: '1.0', id: 1, method: 'ping' }, 1],
      [{ jsonrpc: '2.0', id: 2 }, 2], // no method
      [{ jsonrpc: '2.0', id: 3, method: 42 }, 3],
      [{ jsonrpc: '2.0', id: { nested: true }, method: 'ping' }, null], // wrong id type
      [{ jsonrpc: '2.0', id: null, method: 'ping' }, null],
      [{ jsonrpc: '2.0', id: true, method: 'ping' }, null],
      [{ jsonrpc: '2.0', id: 4, method: 'ping', params: 'text' }, 4],
      [42, null],
      ['ping', null],
    ];
    for (const [message, id] of cases) {
      const body = await rpc(JSON.stringify(message), 400);
      expect(body, JSON.stringify(message)).toMatchObject({ jsonrpc: '2.0', id, error: { code: -32600 } });
      expect(body.error.data.details.length).toBeGreaterThan(0);
    }
  });

  it('an id JSON cannot carry back (1e400 parses to Infinity) is answered with id null, in a batch too', async () => {
    // JSON has no Infinity: echoing it made the batch reply unserializable, a 500 instead of -32600
    const single = await rpc('{"jsonrpc":"2.0","id":1e400,"method":"ping"}', 400);
    expect(single).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    const batch = await rpc(
      '[{"jsonrpc":"2.0","id":-1e400,"method":"ping"},{"jsonrpc":"1.0","id":1e400,"method":"ping"},{"jsonrpc":"2.0","id":7,"method":"ping"}]',
    );
    expect(batch).toEqual([
      expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32600 }) }),
      expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32600 }) }),
      { jsonrpc: '2.0', id: 7, result: {} },
    ]);
  });

  it('-32601 for an unknown method, with the request id', async () => {
    for (const method of ['resources/list', 'tools/delete', 'prompts/get']) {
      const body = await rpc({ jsonrpc: '2.0', id: 5, method });
      expect(body).toMatchObject({ jsonrpc: '2.0', id: 5, error: { code: -32601 } });
    }
  });

  it('-32602 for an unknown tool, naming the tools that exist', async () => {
    const body = await rpc({
      jsonrpc: '2.0',
      id: 6,
      method: 'tools/call',
      params: { name: 'drop_tables', arguments: {} },
    });
    expect(body).toEqual({
      jsonrpc: '2.0',
      id: 6,
      error: {
        code: -32602,
        message: 'Unknown tool: drop_tables.',
        data: { tool: 'drop_tables', available: expect.arrayContaining(['list_customers', 'tax_lookup']) },
      },
    });
  });

  it('invalid arguments are a tool result with isError: true, its text naming each field and why', async () => {
    const toolError = async (id: number, name: string, args?: object): Promise<string> => {
      const body = await rpc({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { name, ...(args && { arguments: args }) },
      });
      expect(body.error, JSON.stringify(body)).toBeUndefined();
      expect(body).toEqual({
        jsonrpc: '2.0',
        id,
        result: { content: [{ type: 'text', text: expect.any(String) }], isError: true },
      });
      return body.result.content[0].text;
    };
    const listInvoices = await toolError(7, 'list_invoices', { status: 'OVERDUE', limit: 0, customer: 3 });
    expect(listInvoices).toMatch(/^Invalid arguments for list_invoices: /);
    expect(listInvoices).toContain('status: Must be one of: POSTED, PARTIALLY_PAID, PAID.');
    expect(listInvoices).toContain('limit: Must be at least 1.');
    expect(listInvoices).toContain('customer: Unknown field.');
    expect(await toolError(8, 'get_customer')).toBe(
      'Invalid arguments for get_customer: customer_id: Required.',
    );
    expect(await toolError(12, 'get_customer', { customer_id: 'abc' })).toBe(
      'Invalid arguments for get_customer: customer_id: Must be a number.',
    );
    expect(await toolError(13, 'list_customers', { limit: 0 })).toBe(
      'Invalid arguments for list_customers: limit: Must be at least 1.',
    );
    expect(await toolError(9, 'revenue_summary', { from: '2026-03-01', to: '2026-01-01' })).toMatch(
      /^Invalid arguments for revenue_summary: from: /,
    );
    // a date Postgres cannot hold is the caller's mistake, not a tool failure
    expect(await toolError(11, 'revenue_summary', { from: '0000-01-01' })).toMatch(
      /^Invalid arguments for revenue_summary: from: /,
    );
  });

  it('arguments that are not an object are a tool result with isError: true, not -32602', async () => {
    for (const [index, args] of [null, 'x', [1], 5].entries()) {
      const body = await rpc({
        jsonrpc: '2.0',
        id: 20 + index,
        method: 'tools/call',
        params: { name: 'list_customers', arguments: args },
      });
      expect(body, JSON.stringify(args)).toEqual({
        jsonrpc: '2.0',
        id: 20 + index,
        result: {
          content: [
            { type: 'text', text: 'Invalid arguments for list_customers: arguments: Must be an object.' },
          ],
          isError: true,
        },
      });
    }
  });

  it('an id past 2^53 is reported once', async () => {
    for (const [index, [name, args]] of (
      [
        ['get_customer', '{"customer_id":99999999999999999999}'],
        ['list_invoices', '{"customer_id":99999999999999999999}'],
      ] as const
    ).entries()) {
      const body = await rpc(
        `{"jsonrpc":"2.0","id":${30 + index},"method":"tools/call","params":{"name":"${name}","arguments":${args}}}`,
      );
      expect(body.result).toEqual({
        content: [
          {
            type: 'text',
            text: `Invalid arguments for ${name}: customer_id: Must be at most 9007199254740991.`,
          },
        ],
        isError: true,
      });
    }
  });

  it('-32602 when tools/call does not name a tool', async () => {
    const noName = await rpc({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: {} });
    expect(noName.error).toMatchObject({ code: -32602, data: { details: [{ field: 'params.name' }] } });
  });

  it('a failure inside a tool is a normal result with isError: true', async () => {
    const body = await rpc({
      jsonrpc: '2.0',
      id: 11,
      method: 'tools/call',
      params: { name: 'get_customer', arguments: { customer_id: 424242 } },
    });
    expect(body).toEqual({
      jsonrpc: '2.0',
      id: 11,
      result: { content: [{ type: 'text', text: 'Customer 424242 not found.' }], isError: true },
    });
  });

  it('a tool call result is text content holding compact JSON', async () => {
    const body = await rpc({
      jsonrpc: '2.0',
      id: 12,
      method: 'tools/call',
      params: { name: 'tax_lookup', arguments: { country: 'CA', state_province: 'ON', amount: '19.99' } },
    });
    expect(body.result.isError).toBe(false);
    const text: string = body.result.content[0].text;
    expect(text).not.toContain('\n');
    expect(JSON.parse(text)).toMatchObject({
      tax_type: 'HST',
      tax_amount: '2.60000000',
      total_with_tax: '22.59000000',
    });
  });

  it('the usage tools answer over plain HTTP; an unknown subscription is an isError result', async () => {
    for (const name of ['get_subscription_usage', 'preview_upcoming_invoice']) {
      const body = await rpc({
        jsonrpc: '2.0',
        id: 13,
        method: 'tools/call',
        params: { name, arguments: { subscription_id: 999_999 } },
      });
      expect(body.result).toEqual({
        isError: true,
        content: [{ type: 'text', text: 'Subscription 999999 not found.' }],
      });
    }
  });

  it('answers a batch with an array in order, skipping notifications; all-notification batches get 202', async () => {
    const body = await rpc([
      { jsonrpc: '2.0', id: 'a', method: 'ping' },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 'b', method: 'no/such/method' },
      { jsonrpc: '2.0', id: 'c' },
    ]);
    expect(body).toEqual([
      { jsonrpc: '2.0', id: 'a', result: {} },
      { jsonrpc: '2.0', id: 'b', error: expect.objectContaining({ code: -32601 }) },
      { jsonrpc: '2.0', id: 'c', error: expect.objectContaining({ code: -32600 }) },
    ]);
    const notifications = await post([{ jsonrpc: '2.0', method: 'notifications/initialized' }]);
    expect(notifications.status).toBe(202);
    expect(await notifications.text()).toBe('');
  });

  it('refuses an empty batch and a batch over the cap with -32600', async () => {
    expect((await rpc([], 400)).error.code).toBe(-32600);
    const big = Array.from({ length: 11 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
    expect(await rpc(big, 400)).toMatchObject({ id: null, error: { code: -32600 } });
    // the cap itself (MAX_BATCH_MESSAGES, 10) is accepted, every message answered
    const full = Array.from({ length: 10 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));
    expect(await rpc(full)).toEqual(full.map(({ id }) => ({ jsonrpc: '2.0', id, result: {} })));
  });

  it('refuses an unsupported MCP-Protocol-Version header and accepts a supported one', async () => {
    const bad = await post(
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { 'mcp-protocol-version': '2020-01-01' },
    );
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as Json).error.code).toBe(-32600);
    const good = await post(
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { 'mcp-protocol-version': '2025-06-18' },
    );
    expect(good.status).toBe(200);
  });

  it('GET and DELETE answer 405 with Allow: POST', async () => {
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(api.mcpUrl, {
        method,
        headers: { authorization: `Bearer ${org.apiKey}` },
      });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect(((await response.json()) as Json).error_code).toBe('METHOD_NOT_ALLOWED');
    }
  });

  it('401 without a key or with a wrong one, before the body is looked at', async () => {
    const missing = await api.postMcp({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error_code: 'UNAUTHORIZED' });
    const wrong = await api.postMcp('not json', { key: 'sk_live_wrong' });
    expect(wrong.status).toBe(401);
  });

  it('415 for a body that is not declared as JSON', async () => {
    const response = await post('{"jsonrpc":"2.0","id":1,"method":"ping"}', { 'content-type': 'text/plain' });
    expect(response.status).toBe(415);
  });

  it('415 for a compressed body, which it does not decompress, like every route', async () => {
    const response = await post('{"jsonrpc":"2.0","id":1,"method":"ping"}', { 'content-encoding': 'gzip' });
    expect(response.status).toBe(415);
    expect(await response.json()).toMatchObject({
      error_code: 'UNSUPPORTED_MEDIA_TYPE',
      detail: 'Content-Encoding gzip is not supported; send the body uncompressed.',
    });
  });

  it('413 for a body over the limit, like every route', async () => {
    const huge = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'ping',
      params: { pad: 'x'.repeat(1_100_000) },
    });
    const response = await post(huge);
    expect(response.status).toBe(413);
    expect(((await response.json()) as Json).error_code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('counts MCP calls in the hourly bucket and answers 429 over the limit', async () => {
    const limited = await createTestOrg(api.platform.db, { requestsPerHour: 3 });
    const ping = () => api.postMcp({ jsonrpc: '2.0', id: 1, method: 'ping' }, { key: limited.apiKey });
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 3; i++) {
      const response = await ping();
      expect(response.status).toBe(200);
      expect(response.headers.get('x-ratelimit-limit')).toBe('3');
      remaining.push(response.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const over = await ping();
    expect(over.status).toBe(429);
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await over.json()).toMatchObject({ error_code: 'RATE_LIMITED' });
  });
});
