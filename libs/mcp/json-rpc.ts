import { z } from 'zod';
import { fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../errors/index.js';

/**
 * JSON-RPC 2.0 framing for the MCP endpoint: what a valid message is and how errors look. Kept
 * apart from MCP itself (server.ts) so the spec's error codes are decided in one small place.
 */

export const JSON_RPC_ERRORS = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
} as const;

export type JsonRpcId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: unknown;
}

export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: unknown;
}

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type JsonRpcResponse =
  | { jsonrpc: '2.0'; id: JsonRpcId; result: unknown }
  | { jsonrpc: '2.0'; id: JsonRpcId | null; error: JsonRpcErrorObject };

/** One element of a POST body, sorted into what the server does with it. */
export type IncomingMessage =
  | { kind: 'request'; request: JsonRpcRequest }
  | { kind: 'notification'; notification: JsonRpcNotification }
  | { kind: 'invalid'; response: JsonRpcResponse };

/** A method-level failure: the dispatcher turns it into an error response with the request's id. */
export class JsonRpcError extends Error {
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'JsonRpcError';
    this.code = code;
    this.data = data;
  }
}

export function errorResponse(
  id: JsonRpcId | null,
  code: number,
  message: string,
  data?: unknown,
): JsonRpcResponse {
  return { jsonrpc: '2.0', id, error: data === undefined ? { code, message } : { code, message, data } };
}

export function resultResponse(id: JsonRpcId, result: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', id, result };
}

/** The body as JSON; not ok when it is not JSON at all (-32700). */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * An id the reply can echo. A number must be finite: JSON.parse reads 1e400 as Infinity, which
 * JSON cannot write back (and the response schema refuses), so such an id is answered as null.
 */
function isValidId(id: unknown): id is JsonRpcId {
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id));
}

/**
 * A JSON-RPC 2.0 request or notification as MCP uses it (MCP forbids a null id). The one schema
 * of a message: classifyMessage validates with it and the OpenAPI document shows it.
 */
export const JsonRpcMessage = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z
      .union([z.string(), z.number()])
      .optional()
      .meta({ description: 'Absent for a notification, which gets 202 and no body.' }),
    method: z
      .string()
      .min(1)
      .meta({ examples: ['initialize', 'tools/list', 'tools/call', 'ping'] }),
    params: z.union([z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
  })
  .meta({ id: 'JsonRpcRequest' });

export const JsonRpcResponseBody = z
  .object({
    jsonrpc: z.literal('2.0'),
    id: z.union([z.string(), z.number()]).nullable(),
    result: z.unknown().optional(),
    error: z
      .object({
        code: z.number().int().meta({
          description:
            '-32700 parse error, -32600 invalid request, -32601 unknown method, -32602 unknown tool or malformed tools/call params',
        }),
        message: z.string(),
        data: z.unknown().optional(),
      })
      .optional(),
  })
  .meta({ id: 'JsonRpcResponse' });

/**
 * Sorts one message. Anything that is not a JSON-RPC 2.0 request or notification (not an object,
 * no `jsonrpc: "2.0"`, no string `method`, an `id` that is neither string nor number, `params`
 * that is neither object nor array) is an invalid request; its error echoes the id when that id
 * is usable and is null otherwise, as JSON-RPC 2.0 prescribes.
 */
export function classifyMessage(message: unknown): IncomingMessage {
  const parsed = JsonRpcMessage.safeParse(message, ZOD_PARSE_OPTIONS);
  if (!parsed.success) {
    const raw = message as { id?: unknown } | null;
    const id = typeof raw === 'object' && raw !== null && isValidId(raw.id) ? raw.id : null;
    const details = fieldErrorsFromZod(parsed.error.issues);
    return {
      kind: 'invalid',
      response: errorResponse(
        id,
        JSON_RPC_ERRORS.INVALID_REQUEST,
        'Invalid request: not a JSON-RPC 2.0 request or notification object.',
        { details },
      ),
    };
  }
  const { id, ...rest } = parsed.data;
  if (id === undefined) return { kind: 'notification', notification: rest };
  return { kind: 'request', request: { ...rest, id } };
}
