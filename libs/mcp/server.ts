import { z } from 'zod';
import type { Database } from '../db/index.js';
import { ApiError, fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { API_VERSION } from '../schemas/index.js';
import type { UsageReadStores } from '../usage/index.js';
import {
  classifyMessage,
  errorResponse,
  type IncomingMessage,
  JSON_RPC_ERRORS,
  JsonRpcError,
  type JsonRpcRequest,
  type JsonRpcResponse,
  parseJson,
  resultResponse,
} from './json-rpc.js';
import { MCP_TOOLS, type McpTool } from './tools/index.js';

/** Newest first; the same versions the official SDK negotiates (docs/architecture.md, "Rules of the contract"). */
export const SUPPORTED_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'] as const;
export const LATEST_PROTOCOL_VERSION = SUPPORTED_PROTOCOL_VERSIONS[0];

/**
 * A JSON-RPC batch counts as one request against the hourly limit, so its size is capped: a
 * batch cannot multiply an organization's quota by more than this (see docs/decisions.md).
 */
export const MAX_BATCH_MESSAGES = 10;

/** A tool runs on behalf of an assistant: a runaway query must not hold a connection for long. */
const TOOL_STATEMENT_TIMEOUT = '10s';

export const SERVER_INFO = {
  name: 'billing-public-api',
  title: 'Billing Public API (read-only)',
  version: API_VERSION,
} as const;

const INSTRUCTIONS =
  "Read-only access to one organization's billing data: customers, invoices, payments, products, " +
  'revenue totals and destination sales tax. Money amounts are exact decimal strings with 8 fractional ' +
  'digits in the currency given beside them; quote them as they are.';

/** The requested version when we speak it, else our latest (the client then decides). */
export function negotiateProtocolVersion(requested: unknown): string {
  return typeof requested === 'string' &&
    (SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(requested)
    ? requested
    : LATEST_PROTOCOL_VERSION;
}

/** What the HTTP transport sends: a JSON body with a status, or 202 with no body. */
export type McpHttpAnswer =
  | { status: 200 | 400; body: JsonRpcResponse | JsonRpcResponse[] }
  | { status: 202; body?: undefined };

export interface McpCaller {
  orgId: number;
  /** The MCP-Protocol-Version header, when the client sent one. */
  protocolVersionHeader?: string | undefined;
}

export interface McpServerOptions {
  db: Pick<Database, 'transaction'>;
  log: Logger;
  tools?: readonly McpTool[];
  now?: () => Date;
  /** What the usage tools read through (the api's usage read stores). */
  usage?: UsageReadStores | undefined;
}

const CallToolParams = z.object({
  name: z.string().min(1),
  // any value: the tool's input schema judges it, so `"arguments": null` is an isError result the
  // assistant can correct, like any other invalid argument (-32602 is for an unknown tool)
  arguments: z.unknown().optional(),
});

const InitializeParams = z.looseObject({ protocolVersion: z.unknown().optional() });

/**
 * The stateless MCP server: each HTTP body is answered on its own, with no session. It speaks
 * JSON-RPC 2.0 itself rather than through the SDK's server transport, which departs from the
 * spec in three places (docs/architecture.md, "Rules of the contract"); the SDK's own client is what the tests hold it to.
 */
export class McpServer {
  private readonly db: Pick<Database, 'transaction'>;
  private readonly log: Logger;
  private readonly now: () => Date;
  private readonly usage: UsageReadStores | undefined;
  private readonly tools: ReadonlyMap<string, McpTool>;
  private readonly toolList: readonly ToolDescription[];

  constructor(options: McpServerOptions) {
    this.db = options.db;
    this.log = options.log;
    this.now = options.now ?? (() => new Date());
    this.usage = options.usage;
    const tools = options.tools ?? MCP_TOOLS;
    this.tools = new Map(tools.map((tool) => [tool.name, tool]));
    this.toolList = tools.map(describeTool);
  }

  /** Answers one POST body (raw text, so a body that is not JSON is -32700 and not a 400 of the framework). */
  async handleHttpBody(body: string, caller: McpCaller): Promise<McpHttpAnswer> {
    const parsed = parseJson(body);
    if (!parsed.ok) {
      return {
        status: 400,
        body: errorResponse(null, JSON_RPC_ERRORS.PARSE_ERROR, 'Parse error: the body is not valid JSON.'),
      };
    }
    const version = caller.protocolVersionHeader;
    if (version !== undefined && !(SUPPORTED_PROTOCOL_VERSIONS as readonly string[]).includes(version)) {
      return {
        status: 400,
        body: errorResponse(
          null,
          JSON_RPC_ERRORS.INVALID_REQUEST,
          `Unsupported MCP-Protocol-Version ${JSON.stringify(version)}; supported: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')}.`,
        ),
      };
    }
    const message = parsed.value;
    if (!Array.isArray(message)) {
      const incoming = classifyMessage(message);
      // A message that is not JSON-RPC at all is refused at the HTTP level too, as the MCP transport asks.
      if (incoming.kind === 'invalid') return { status: 400, body: incoming.response };
      const answer = await this.handleMessage(incoming, caller);
      return answer ? { status: 200, body: answer } : { status: 202 };
    }
    if (message.length === 0 || message.length > MAX_BATCH_MESSAGES) {
      const why =
        message.length === 0 ? 'An empty batch' : `A batch of more than ${MAX_BATCH_MESSAGES} messages`;
      return {
        status: 400,
        body: errorResponse(null, JSON_RPC_ERRORS.INVALID_REQUEST, `${why} is not accepted.`),
      };
    }
    const answers: JsonRpcResponse[] = [];
    // One after the other: a batch never holds more than one database connection.
    for (const element of message) {
      const answer = await this.handleMessage(classifyMessage(element), caller);
      if (answer) answers.push(answer);
    }
    return answers.length === 0 ? { status: 202 } : { status: 200, body: answers };
  }

  /** The response to one message, or undefined for a notification (never answered). */
  private async handleMessage(
    incoming: IncomingMessage,
    caller: McpCaller,
  ): Promise<JsonRpcResponse | undefined> {
    if (incoming.kind === 'invalid') return incoming.response;
    if (incoming.kind === 'notification') return undefined;
    const { request } = incoming;
    try {
      return resultResponse(request.id, await this.dispatch(request, caller));
    } catch (error) {
      if (error instanceof JsonRpcError)
        return errorResponse(request.id, error.code, error.message, error.data);
      this.log.error({ err: error, method: request.method, orgId: caller.orgId }, 'mcp request failed');
      return errorResponse(request.id, JSON_RPC_ERRORS.INTERNAL_ERROR, 'Internal error.');
    }
  }

  private async dispatch(request: JsonRpcRequest, caller: McpCaller): Promise<unknown> {
    switch (request.method) {
      case 'initialize':
        return this.initialize(request.params);
      case 'ping':
        return {};
      case 'tools/list':
        return { tools: this.toolList };
      case 'tools/call':
        return this.callTool(request.params, caller);
      default:
        throw new JsonRpcError(JSON_RPC_ERRORS.METHOD_NOT_FOUND, `Method not found: ${request.method}.`, {
          supported: ['initialize', 'ping', 'tools/list', 'tools/call'],
        });
    }
  }

  private initialize(params: unknown): object {
    const parsed = InitializeParams.safeParse(params ?? {});
    if (!parsed.success) {
      throw new JsonRpcError(JSON_RPC_ERRORS.INVALID_PARAMS, 'Invalid params: initialize takes an object.');
    }
    return {
      protocolVersion: negotiateProtocolVersion(parsed.data.protocolVersion),
      capabilities: { tools: { listChanged: false } },
      serverInfo: SERVER_INFO,
      instructions: INSTRUCTIONS,
    };
  }

  private async callTool(params: unknown, caller: McpCaller): Promise<object> {
    const call = CallToolParams.safeParse(params ?? {}, ZOD_PARSE_OPTIONS);
    if (!call.success) {
      throw new JsonRpcError(
        JSON_RPC_ERRORS.INVALID_PARAMS,
        'Invalid params: tools/call takes { name, arguments }.',
        { details: fieldErrorsFromZod(call.error.issues, 'params') },
      );
    }
    const tool = this.tools.get(call.data.name);
    if (!tool) {
      throw new JsonRpcError(JSON_RPC_ERRORS.INVALID_PARAMS, `Unknown tool: ${call.data.name}.`, {
        tool: call.data.name,
        available: [...this.tools.keys()],
      });
    }
    const args = call.data.arguments === undefined ? {} : call.data.arguments;
    const input = tool.input.safeParse(args, ZOD_PARSE_OPTIONS);
    if (!input.success) {
      // The spec: a tool that cannot run is a result the assistant reads (and can correct its
      // arguments from), not a protocol error; -32602 is kept for a tool that does not exist.
      const problems = fieldErrorsFromZod(input.error.issues).map(
        ({ field, message }) => `${field === '(body)' ? 'arguments' : field}: ${message}`,
      );
      return toolResult(`Invalid arguments for ${tool.name}: ${problems.join(' ')}`, true);
    }
    const today = this.now().toISOString().slice(0, 10);
    try {
      const value = await this.db.transaction(
        async (tx) => {
          await tx.query(`SET LOCAL statement_timeout = '${TOOL_STATEMENT_TIMEOUT}'`);
          return tool.run(input.data, { db: tx, orgId: caller.orgId, today, usage: this.usage });
        },
        { readOnly: true },
      );
      return toolResult(JSON.stringify(value), false);
    } catch (error) {
      // A failure inside a tool is a result the assistant reads, not a protocol error.
      if (error instanceof ApiError && error.status < 500) return toolResult(error.message, true);
      this.log.error({ err: error, tool: tool.name, orgId: caller.orgId }, 'mcp tool failed');
      return toolResult(`The ${tool.name} tool failed unexpectedly; try again later.`, true);
    }
  }
}

function toolResult(text: string, isError: boolean): object {
  return { content: [{ type: 'text', text }], isError };
}

export interface ToolDescription {
  name: string;
  title: string;
  description: string;
  inputSchema: { type: 'object'; properties?: Record<string, unknown>; required?: string[] };
  annotations: Record<string, unknown>;
}

/** How tools/list (and llms.txt) describe a tool: its input schema as JSON Schema, from the zod schema. */
export function describeTool(tool: McpTool): ToolDescription {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(tool.input, { io: 'input' });
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: inputSchema as ToolDescription['inputSchema'],
    annotations: { title: tool.title, readOnlyHint: true, destructiveHint: false, openWorldHint: false },
  };
}
