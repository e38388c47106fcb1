import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import { startTestApi, type TestApi } from '../helpers/api.js';

/** The api service listening on a free loopback port, for real HTTP clients (fetch, the SDK). */
export interface ListeningApi extends TestApi {
  origin: string;
  mcpUrl: string;
  /** POST a raw body to the MCP endpoint the way curl would: `Accept: application/json` only. */
  postMcp(
    body: string | object,
    options?: { key?: string; headers?: Record<string, string> },
  ): Promise<Response>;
}

export async function startListeningApi(
  options: Parameters<typeof startTestApi>[0] = {},
): Promise<ListeningApi> {
  const api = await startTestApi(options);
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = api.app.server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  const mcpUrl = `${origin}${BASE_PATH}/mcp`;
  return {
    ...api,
    origin,
    mcpUrl,
    postMcp(body, { key, headers } = {}) {
      return fetch(mcpUrl, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/json',
          ...(key ? { authorization: `Bearer ${key}` } : {}),
          ...headers,
        },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
    },
  };
}

/** The official SDK client, connected (initialize + notifications/initialized) with a bearer key. */
export async function connectSdkClient(mcpUrl: string, apiKey: string): Promise<Client> {
  const client = new Client({ name: 'billing-tests', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), {
    requestInit: { headers: { authorization: `Bearer ${apiKey}` } },
  });
  await client.connect(transport);
  return client;
}

/** The JSON text of a tool result, parsed. */
export function toolJson(result: unknown): unknown {
  const content = (result as { content: { type: string; text: string }[] }).content;
  if (content.length !== 1 || content[0]!.type !== 'text') throw new Error('expected one text content item');
  return JSON.parse(content[0]!.text);
}

/** The result of one tools/call over plain HTTP, through `api.request` (no listening socket needed). */
export async function callTool(
  api: Pick<TestApi, 'request'>,
  apiKey: string,
  name: string,
  args: Record<string, unknown>,
): Promise<{ content: { type: string; text: string }[]; isError: boolean }> {
  const response = await api.request({
    method: 'POST',
    path: '/mcp',
    key: apiKey,
    headers: { accept: 'application/json, text/event-stream' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } },
  });
  if (response.statusCode !== 200)
    throw new Error(`tools/call ${name}: ${response.statusCode} ${response.body}`);
  return response.json().result;
}
