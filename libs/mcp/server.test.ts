import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeTool, LATEST_PROTOCOL_VERSION, McpServer, negotiateProtocolVersion } from './server.js';
import { MCP_TOOLS } from './tools/index.js';

describe('negotiateProtocolVersion', () => {
  it('keeps a version we speak and answers our latest otherwise', () => {
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      expect(negotiateProtocolVersion(version)).toBe(version);
    }
    expect(LATEST_PROTOCOL_VERSION).toBe('2025-11-25');
    expect(negotiateProtocolVersion('2024-10-07')).toBe('2025-11-25');
    expect(negotiateProtocolVersion(undefined)).toBe('2025-11-25');
    expect(negotiateProtocolVersion(20251125)).toBe('2025-11-25');
  });
});

describe('tool descriptions', () => {
  it('publish each zod input schema as an object JSON Schema without the dialect marker', () => {
    for (const tool of MCP_TOOLS) {
      const described = describeTool(tool);
      expect(described.inputSchema.type).toBe('object');
      expect(described.inputSchema).not.toHaveProperty('$schema');
      expect(described.inputSchema).toMatchObject({ additionalProperties: false });
    }
  });

  it('tell a client every tool only reads, within this service', () => {
    for (const tool of MCP_TOOLS) {
      expect(describeTool(tool).annotations, tool.name).toEqual({
        title: tool.title,
        readOnlyHint: true,
        destructiveHint: false,
        openWorldHint: false,
      });
    }
  });

  it('describe defaults as optional: limit is never required', () => {
    const described = describeTool({
      name: 't',
      title: 'T',
      description: 'd',
      input: z.strictObject({ id: z.number(), limit: z.number().default(25) }),
      run: async () => ({}),
    });
    expect(described.inputSchema.required).toEqual(['id']);
  });
});

describe('McpServer protocol errors (no tool runs, so no database is reached)', () => {
  const server = new McpServer({
    db: {
      transaction: () => {
        throw new Error('boom');
      },
    } as unknown as ConstructorParameters<typeof McpServer>[0]['db'],
    log: { error: () => undefined } as unknown as ConstructorParameters<typeof McpServer>[0]['log'],
    tools: [{ name: 't', title: 'T', description: 'd', input: z.strictObject({}), run: async () => ({}) }],
  });
  const post = (body: unknown) => server.handleHttpBody(JSON.stringify(body), { orgId: 1 });

  it('-32601 names the method and the supported ones', async () => {
    expect(await post({ jsonrpc: '2.0', id: 9, method: 'nope' })).toEqual({
      status: 200,
      body: {
        jsonrpc: '2.0',
        id: 9,
        error: {
          code: -32601,
          message: 'Method not found: nope.',
          data: { supported: ['initialize', 'ping', 'tools/list', 'tools/call'] },
        },
      },
    });
  });

  it('-32602 for an empty tool name; a tool that throws is an isError result', async () => {
    const empty = await post({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: '' } });
    expect(empty.body).toMatchObject({ id: 1, error: { code: -32602 } });
    const failed = await post({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 't' } });
    expect(failed.body).toMatchObject({ id: 2, result: { isError: true } });
  });

  it('says which batch it refuses: an empty one, or one of a single message is fine', async () => {
    expect((await post([])).body).toMatchObject({ error: { message: 'An empty batch is not accepted.' } });
    expect(await post([{ jsonrpc: '2.0', id: 1, method: 'ping' }])).toEqual({
      status: 200,
      body: [{ jsonrpc: '2.0', id: 1, result: {} }],
    });
  });
});
