import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isConnectionFailure } from '../../../libs/db/index.js';
import { DependencyUnavailableError } from '../../../libs/dependency-guard/index.js';
import { ApiError, toErrorBody } from '../../../libs/errors/index.js';
import { newRequestId } from '../../../libs/schemas/index.js';
import type { ApiInstance } from '../types.js';

/**
 * Fastify's own request errors, mapped to the spec's codes: those a request can raise (its
 * registration-time errors, such as FST_ERR_CTP_INVALID_TYPE, never reach a client).
 */
const FASTIFY_CODES: Record<string, (error: FastifyError) => ApiError> = {
  FST_ERR_CTP_INVALID_JSON_BODY: () => ApiError.invalidJson(),
  FST_ERR_CTP_EMPTY_JSON_BODY: () => ApiError.emptyJsonBody(),
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: () => ApiError.badRequest('Content-Length does not match the body.'),
  FST_ERR_CTP_BODY_TOO_LARGE: () => ApiError.payloadTooLarge(),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => ApiError.unsupportedMediaType(),
  FST_ERR_BAD_URL: () => ApiError.badRequest('The request URL is malformed.'),
  // a path segment longer than any id names nothing, like any other unknown id
  FST_ERR_MAX_PARAM_LENGTH: () => new ApiError('NOT_FOUND', 'No record has this id.'),
};

export function toApiError(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  const fastifyError = error as Partial<FastifyError> | null;
  const mapped = fastifyError?.code ? FASTIFY_CODES[fastifyError.code] : undefined;
  if (mapped) return mapped(fastifyError as FastifyError);
  if (error instanceof DependencyUnavailableError) {
    return ApiError.serviceUnavailable(`${error.label} is unavailable; retry shortly.`, 1, error);
  }
  if (isConnectionFailure(error)) {
    return ApiError.serviceUnavailable('A service dependency is unavailable; retry shortly.', 1, error);
  }
  return undefined;
}

export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiError = toApiError(error);
  // Internals go to the log with the request id, never to the client.
  if ((!apiError || apiError.status >= 500) && !apiError?.expected) {
    request.log.error({ err: error }, 'request failed');
  }
  const { status, body } = toErrorBody(apiError ?? error, request.id);
  if (apiError) reply.headers(apiError.headers);
  return reply.code(status).header('X-Request-ID', request.id).type('application/json').send(body);
}

/**
 * A request Node's HTTP parser refused before Fastify saw it (headers too large, a control
 * character in a header, an unknown method, a bad Content-Length): answered with the same error
 * body and X-Request-ID as every other error, then the connection is closed, as the parser cannot
 * tell where the next request would start. Fastify's `clientErrorHandler`.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const apiError =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError('REQUEST_HEADERS_TOO_LARGE', 'The request headers are too large.')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError('REQUEST_TIMEOUT', 'The request took too long to arrive.')
        : ApiError.badRequest('The request is not valid HTTP.');
  const requestId = newRequestId();
  const { status, body } = toErrorBody(apiError, requestId);
  const json = JSON.stringify(body);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(json)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${json}`,
    );
  }
  socket.destroy();
}

/** The one place where failures become HTTP responses. */
export function registerErrorHandling(app: ApiInstance): void {
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply));
  app.setNotFoundHandler((request, reply) =>
    sendError(
      new ApiError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`),
      request,
      reply,
    ),
  );
}
