import type { Socket } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { DependencyUnavailableError } from '../../../libs/dependency-guard/index.js';
import { ApiError } from '../../../libs/errors/index.js';
import type { ApiInstance } from '../types.js';
import { answerClientError, registerErrorHandling, toApiError } from './errors.js';

describe('toApiError', () => {
  it('answers 503 for a database that cannot be reached or stopped answering, 500 for anything else', () => {
    for (const message of [
      'Connection terminated unexpectedly',
      'timeout exceeded when trying to connect',
      'Query read timeout',
    ]) {
      expect(toApiError(new Error(message))?.code, message).toBe('SERVICE_UNAVAILABLE');
    }
    expect(toApiError(Object.assign(new Error('terminating connection'), { code: '57P01' }))?.code).toBe(
      'SERVICE_UNAVAILABLE',
    );
    expect(toApiError(new Error('something else'))).toBeUndefined();
  });

  it('names a dependency that is down in words a client reads, with Retry-After', () => {
    const error = toApiError(new DependencyUnavailableError('kafka', 'connection refused', 'The usage log'));
    expect(error).toMatchObject({
      status: 503,
      code: 'SERVICE_UNAVAILABLE',
      message: 'The usage log is unavailable; retry shortly.',
      headers: { 'Retry-After': '1' },
    });
  });
});

/**
 * A Fastify app with the error handling whose one route throws `error`; what a request to it got,
 * and the lines the request's log wrote at error level.
 */
async function thrown(error: unknown) {
  const lines: { level: number; err?: { message: string } }[] = [];
  const stream = { write: (line: string) => lines.push(JSON.parse(line)) };
  const app = Fastify({ logger: { level: 'info', stream } }) as unknown as ApiInstance;
  registerErrorHandling(app);
  app.get('/fails', async () => {
    throw error;
  });
  try {
    const response = await app.inject({ method: 'GET', url: '/fails' });
    return { response, errorLines: lines.filter((line) => line.level >= 50) };
  } finally {
    await app.close();
  }
}

describe('sendError', () => {
  it('logs what failed unexpectedly (a bug, a 5xx) with its error, and tells the client nothing of it', async () => {
    const bug = await thrown(new Error('column "secret" does not exist'));
    expect(bug.errorLines.map((line) => line.err?.message)).toEqual(['column "secret" does not exist']);
    expect(bug.response.statusCode).toBe(500);
    expect(bug.response.body).not.toContain('secret');

    const internal = await thrown(new ApiError('INTERNAL_SERVER_ERROR', 'x'));
    expect(internal.errorLines.map((line) => line.err?.message)).toEqual(['x']);
    expect(internal.response.statusCode).toBe(500);
  });

  it("logs no answer that is the client's to act on: a 4xx, or an expected 503 (an outage, a drain)", async () => {
    for (const error of [
      ApiError.notFound('Customer 1'),
      ApiError.badRequest('x'),
      ApiError.serviceUnavailable('The database is unavailable; retry shortly.'),
      ApiError.shuttingDown(),
    ]) {
      const { response, errorLines } = await thrown(error);
      expect(errorLines, error.code).toEqual([]);
      expect(response.statusCode, error.code).toBe(error.status);
    }
  });
});

/** A socket that notes what is written to it and whether it was closed. */
function socket({ destroyed = false, writable = true } = {}) {
  const written: string[] = [];
  const state = { written, destroyedAfter: false };
  const fake = {
    destroyed,
    writable,
    write: (text: string) => written.push(text),
    destroy: () => {
      state.destroyedAfter = true;
    },
  };
  return { socket: fake as unknown as Socket, state };
}

const errorOf = (code: string) => Object.assign(new Error(code), { code });

describe('answerClientError', () => {
  it('answers a request that took too long to arrive 408 REQUEST_TIMEOUT, sized exactly, then closes', () => {
    const { socket: open, state } = socket();
    answerClientError(errorOf('ERR_HTTP_REQUEST_TIMEOUT'), open);
    expect(state.written).toHaveLength(1);
    const [head, body] = state.written[0]!.split('\r\n\r\n') as [string, string];
    const lines = head.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 408 Request Timeout');
    expect(lines).toContain('Connection: close');
    expect(lines).toContain(`Content-Length: ${Buffer.byteLength(body)}`);
    const requestId = lines.find((line) => line.startsWith('X-Request-ID: '))!.slice('X-Request-ID: '.length);
    expect(JSON.parse(body)).toEqual({
      error_code: 'REQUEST_TIMEOUT',
      detail: 'The request took too long to arrive.',
      request_id: requestId,
    });
    expect(state.destroyedAfter).toBe(true);
  });

  it('writes nothing to a connection the client reset or that is already gone', () => {
    for (const [error, options] of [
      [errorOf('ECONNRESET'), {}],
      [errorOf('HPE_INVALID_METHOD'), { destroyed: true }],
    ] as const) {
      const { socket: gone, state } = socket(options);
      answerClientError(error, gone);
      expect(state.written).toEqual([]);
      expect(state.destroyedAfter).toBe(false);
    }
  });

  it('closes without writing a socket that can no longer be written', () => {
    const { socket: halfClosed, state } = socket({ writable: false });
    answerClientError(errorOf('HPE_INVALID_METHOD'), halfClosed);
    expect(state.written).toEqual([]);
    expect(state.destroyedAfter).toBe(true);
  });
});
