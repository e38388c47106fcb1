import { describe, expect, it } from 'vitest';
import { classifyMessage, errorResponse, parseJson } from './json-rpc.js';

describe('classifyMessage', () => {
  it('tells requests (with an id) from notifications (without)', () => {
    expect(classifyMessage({ jsonrpc: '2.0', id: 7, method: 'ping' })).toEqual({
      kind: 'request',
      request: { jsonrpc: '2.0', id: 7, method: 'ping' },
    });
    expect(classifyMessage({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'a' } })).toEqual(
      {
        kind: 'request',
        request: { jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'a' } },
      },
    );
    expect(classifyMessage({ jsonrpc: '2.0', method: 'notifications/initialized' })).toEqual({
      kind: 'notification',
      notification: { jsonrpc: '2.0', method: 'notifications/initialized' },
    });
  });

  it('answers -32600 for what is not a JSON-RPC 2.0 request, echoing only a usable id', () => {
    const invalid = (message: unknown) => {
      const classified = classifyMessage(message);
      if (classified.kind !== 'invalid') throw new Error(`expected invalid: ${JSON.stringify(message)}`);
      return classified.response;
    };
    expect(invalid({ id: 1, method: 'ping' })).toMatchObject({ id: 1, error: { code: -32600 } });
    expect(invalid({ jsonrpc: '2.0', id: 2 })).toMatchObject({
      id: 2,
      error: { code: -32600, data: { details: [{ field: 'method', code: 'required' }] } },
    });
    expect(invalid({ jsonrpc: '2.0', id: null, method: 'ping' })).toMatchObject({ id: null });
    expect(invalid({ jsonrpc: '2.0', id: [1], method: 'ping' })).toMatchObject({
      id: null,
      error: { data: { details: [{ field: 'id' }] } },
    });
    expect(invalid({ jsonrpc: '2.0', id: 3, method: '' })).toMatchObject({ id: 3 });
    // what JSON.parse makes of 1e400: not an id JSON can write back
    expect(invalid({ jsonrpc: '1.0', id: Number.POSITIVE_INFINITY, method: 'ping' })).toMatchObject({
      id: null,
    });
    expect(invalid({ jsonrpc: '2.0', id: 4, method: 'ping', params: 5 })).toMatchObject({ id: 4 });
    expect(invalid(null)).toMatchObject({ id: null, error: { code: -32600 } });
    expect(invalid([])).toMatchObject({ id: null });
  });
});

describe('parseJson', () => {
  it('parses JSON and reports anything else as not ok', () => {
    expect(parseJson('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJson('null')).toEqual({ ok: true, value: null });
    expect(parseJson('')).toEqual({ ok: false });
    expect(parseJson('{a:1}')).toEqual({ ok: false });
  });
});

describe('errorResponse', () => {
  it('carries data only when there is some', () => {
    expect(errorResponse(1, -32600, 'm')).toStrictEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32600, message: 'm' },
    });
    expect(Object.keys(errorResponse(null, -32700, 'm'))).toEqual(['jsonrpc', 'id', 'error']);
    expect('data' in (errorResponse(null, -32700, 'm') as { error: object }).error).toBe(false);
    expect(errorResponse('a', -32601, 'm', { x: 1 })).toStrictEqual({
      jsonrpc: '2.0',
      id: 'a',
      error: { code: -32601, message: 'm', data: { x: 1 } },
    });
  });
});
