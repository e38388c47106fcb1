import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
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

  it('reads absent params as empty: initialize answers, tools/call asks for params.name', async () => {
    const initialized = await post({ jsonrpc: '2.0', id: 3, method: 'initialize' });
    expect(initialized.body).toMatchObject({ id: 3, result: { protocolVersion: LATEST_PROTOCOL_VERSION } });
    const noParams = await post({ jsonrpc: '2.0', id: 4, method: 'tools/call' });
    expect(noParams.body).toMatchObject({
      id: 4,
      error: { code: -32602, data: { details: [{ field: 'params.name', code: 'required' }] } },
    });
  });

  it('lists the tools it was given, and names the protocol versions it speaks when refusing one', async () => {
    expect((await post({ jsonrpc: '2.0', id: 5, method: 'tools/list' })).body).toMatchObject({
      result: { tools: [{ name: 't', title: 'T', description: 'd' }] },
    });
    const refused = await server.handleHttpBody(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'ping' }), {
      orgId: 1,
      protocolVersionHeader: '2099-01-01',
    });
    expect(refused).toEqual({
      status: 400,
      body: {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message:
            'Unsupported MCP-Protocol-Version "2099-01-01"; supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05.',
        },
      },
    });
  });

  it('says which batch it refuses: an empty one, or one of a single message is fine', async () => {
    expect((await post([])).body).toMatchObject({ error: { message: 'An empty batch is not accepted.' } });
    expect(await post([{ jsonrpc: '2.0', id: 1, method: 'ping' }])).toEqual({
      status: 200,
      body: [{ jsonrpc: '2.0', id: 1, result: {} }],
    });
  });
});

describe('McpServer failures outside the protocol', () => {
  const logged: { fields: Record<string, unknown>; message: string }[] = [];
  const log = {
    error: (fields: Record<string, unknown>, message: string) => logged.push({ fields, message }),
  } as unknown as ConstructorParameters<typeof McpServer>[0]['log'];
  const tools = [
    {
      name: 'pair',
      title: 'Pair',
      description: 'd',
      input: z.strictObject({ x: z.number(), y: z.string() }),
      run: async () => ({}),
    },
  ];
  const db = {
    transaction: () => {
      throw new Error('boom');
    },
  } as unknown as ConstructorParameters<typeof McpServer>[0]['db'];
  /** tools/call of `pair` on a server whose database fails, as organization `orgId`. */
  const callPair = (id: number, args: Record<string, unknown>, orgId: number) =>
    new McpServer({ db, log, tools }).handleHttpBody(
      JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'pair', arguments: args } }),
      { orgId },
    );

  it('names every invalid argument, one sentence after the other', async () => {
    const answer = await callPair(1, {}, 1);
    expect(answer.body).toMatchObject({
      result: { content: [{ type: 'text', text: 'Invalid arguments for pair: x: Required. y: Required.' }] },
    });
  });

  it('a tool that throws is logged with its name and the organization', async () => {
    logged.length = 0;
    const answer = await callPair(2, { x: 1, y: 'a' }, 41);
    expect(answer.body).toMatchObject({
      id: 2,
      result: { isError: true, content: [{ text: 'The pair tool failed unexpectedly; try again later.' }] },
    });
    expect(logged).toEqual([
      { fields: { err: expect.any(Error), tool: 'pair', orgId: 41 }, message: 'mcp tool failed' },
    ]);
  });

  it("hides a server-side ApiError's detail from the assistant, and logs it, as any failure", async () => {
    logged.length = 0;
    const unavailable = new ApiError('SERVICE_UNAVAILABLE', 'pool exhausted on db-7');
    const server = new McpServer({
      db: {
        transaction: async () => {
          throw unavailable;
        },
      } as unknown as ConstructorParameters<typeof McpServer>[0]['db'],
      log,
      tools,
    });
    const answer = await server.handleHttpBody(
      JSON.stringify({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/call',
        params: { name: 'pair', arguments: { x: 1, y: 'a' } },
      }),
      { orgId: 43 },
    );
    expect(answer.body).toMatchObject({
      id: 3,
      result: { isError: true, content: [{ text: 'The pair tool failed unexpectedly; try again later.' }] },
    });
    expect(logged).toEqual([
      { fields: { err: unavailable, tool: 'pair', orgId: 43 }, message: 'mcp tool failed' },
    ]);
  });

  it('anything else that throws is -32603 with the request id, and is logged', async () => {
    logged.length = 0;
    const clockError = new Error('no clock');
    const server = new McpServer({
      db,
      log,
      tools,
      now: () => {
        throw clockError;
      },
    });
    const call = { method: 'tools/call', params: { name: 'pair', arguments: { x: 1, y: 'a' } } };
    expect(
      await server.handleHttpBody(JSON.stringify({ jsonrpc: '2.0', id: 'c-7', ...call }), { orgId: 42 }),
    ).toEqual({
      status: 200,
      body: { jsonrpc: '2.0', id: 'c-7', error: { code: -32603, message: 'Internal error.' } },
    });
    expect(logged).toEqual([
      { fields: { err: clockError, method: 'tools/call', orgId: 42 }, message: 'mcp request failed' },
    ]);
    // in a batch too, each reply keeps its own id
    const batch = await server.handleHttpBody(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, ...call },
        { jsonrpc: '2.0', id: 2, method: 'ping' },
      ]),
      { orgId: 42 },
    );
    expect(batch.body).toEqual([
      { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Internal error.' } },
      { jsonrpc: '2.0', id: 2, result: {} },
    ]);
  });
});
