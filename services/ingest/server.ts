import type { ApiKeyAuthenticator, AuthContext } from '../../libs/auth/index.js';
import { ApiError, toErrorBody } from '../../libs/errors/index.js';
import type { Logger } from '../../libs/log/index.js';
import {
  answerOpsRequest,
  type DependencyCheck,
  ingestNativeServer,
  OPS_PATHS,
  requestInstruments,
} from '../../libs/observability/index.js';
import { BASE_PATH, requestIdFrom } from '../../libs/schemas/index.js';
import { InFlightRequests } from '../../libs/shutdown/index.js';
import {
  batchResponseBody,
  eventResponseBody,
  parseUsageBody,
  type UsageIngest,
} from '../../libs/usage/index.js';
import { bytesOf, Exchange, readBody } from './http.js';
import type { HttpRequest, HttpResponse, HttpTransport } from './transport.js';

export const USAGE_EVENTS_PATH = `${BASE_PATH}/usage/events`;
export const USAGE_BATCH_PATH = `${BASE_PATH}/usage/events/batch`;

export interface IngestServerOptions {
  /** The HTTP server the routes run on (see INGEST_TRUSTED_PROXY). */
  transport: HttpTransport;
  host: string;
  port: number;
  bodyLimit: number;
  authenticator: ApiKeyAuthenticator;
  usage: UsageIngest;
  /** What /readyz checks. */
  checks: () => readonly DependencyCheck[];
  log: Logger;
}

export interface IngestServer {
  port: number;
  /** The HTTP server it runs on. */
  transport: HttpTransport['name'];
  /** Stops accepting, answers new requests on open connections with 503, waits for those in flight. */
  close(): Promise<void>;
}

type Kind = 'event' | 'batch';

/** What the usage routes read of a request: uWS frees the request itself once its handler returns. */
interface ReceivedRequest {
  body: Buffer;
  tooLarge: boolean;
  /** '' when absent. */
  contentType: string;
  /** '' when absent. */
  contentEncoding: string;
  /** Whether the body came with Transfer-Encoding rather than Content-Length. */
  chunked: boolean;
  idempotencyKey: string;
}

/** The request headers the usage routes read, as bytes (see bytesOf). */
const REQUEST_HEADERS = {
  requestId: bytesOf('x-request-id'),
  authorization: bytesOf('authorization'),
  contentType: bytesOf('content-type'),
  contentEncoding: bytesOf('content-encoding'),
  transferEncoding: bytesOf('transfer-encoding'),
  idempotencyKey: bytesOf('idempotency-key'),
};

/**
 * The usage routes on uWebSockets.js, the same contract as the api service's: auth, rate-limit
 * headers, error bodies and X-Request-ID, with the ingest core doing the work. This file only
 * moves bytes: headers are read while the handler runs (uWS frees the request after), the body is
 * collected with a limit, and each response is written once, corked, unless the client left.
 */
export async function startIngestServer(options: IngestServerOptions): Promise<IngestServer> {
  const requests = new InFlightRequests();
  new IngestRoutes(options, requests).register(options.transport.app);
  const listening = await options.transport.listen(options.host, options.port);
  ingestNativeServer.set(options.transport.name === 'uws' ? 1 : 0);
  return {
    port: listening.port,
    transport: options.transport.name,
    async close() {
      if (requests.draining) return;
      requests.startDraining();
      listening.stopAccepting();
      await requests.idle();
    },
  };
}

/** What a usage request's work answers, once the core decided. */
interface Reply {
  status: number;
  headers: Record<string, string>;
  payload: string | Buffer;
}

/**
 * The routes of the ingest server: the two usage routes, 404/405 for everything else, and the
 * operations routes. Every request it begins is counted in `requests` until answered or abandoned,
 * so a drain waits for it; once draining, a usage request is answered 503 at once.
 */
class IngestRoutes {
  private readonly closing = () => this.requests.draining;

  constructor(
    private readonly options: IngestServerOptions,
    private readonly requests: InFlightRequests,
  ) {}

  register(app: HttpTransport['app']): void {
    for (const [route, kind] of [
      [USAGE_EVENTS_PATH, 'event'],
      [USAGE_BATCH_PATH, 'batch'],
    ] as const) {
      // with or without a trailing slash, as the api service routes
      for (const path of [route, `${route}/`]) {
        app.post(path, (res, req) => this.usageRequest(res, req, route, kind));
        app.any(path, (res, req) =>
          this.refuseUnrouted(
            res,
            req,
            route,
            new ApiError('METHOD_NOT_ALLOWED', 'This path supports POST.', { headers: { Allow: 'POST' } }),
          ),
        );
      }
    }
    for (const path of Object.values(OPS_PATHS)) app.get(path, (res) => this.opsRequest(res, path));
    app.any('/*', (res, req) => {
      const path = req.getUrl().split('?')[0];
      this.refuseUnrouted(
        res,
        req,
        'unmatched',
        new ApiError('NOT_FOUND', `No route ${req.getMethod().toUpperCase()} ${path}.`),
      );
    });
  }

  /** POST of a usage route: headers read now, authentication while the body arrives, then the core. */
  private usageRequest(res: HttpResponse, req: HttpRequest, route: string, kind: Kind): void {
    const { log } = this.options;
    const started = performance.now();
    const exchange = new Exchange(res, { closing: this.closing });
    const requestId = requestIdFrom(req.getHeader(REQUEST_HEADERS.requestId));
    exchange.requestId = requestId;
    const authorization = req.getHeader(REQUEST_HEADERS.authorization);
    const contentType = req.getHeader(REQUEST_HEADERS.contentType);
    const contentEncoding = req.getHeader(REQUEST_HEADERS.contentEncoding);
    const chunked = req.getHeader(REQUEST_HEADERS.transferEncoding) !== '';
    const idempotencyKey = req.getHeader(REQUEST_HEADERS.idempotencyKey);
    this.requests.begin();
    let orgId: number | undefined;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      observe('post', route, exchange, started, requestId, orgId, log);
      this.requests.finish();
    };
    exchange.onAbort = finish;
    if (this.requests.draining) {
      exchange.send(
        503,
        { 'Retry-After': '1' },
        JSON.stringify(toErrorBody(ApiError.shuttingDown(), requestId).body),
        { closeConnection: true },
      );
      finish();
      return;
    }
    const authenticated = authenticate(this.options.authenticator, authorization);
    authenticated.catch(() => {});
    readBody(res, this.options.bodyLimit, (body, tooLarge) => {
      const request = { body, tooLarge, contentType, contentEncoding, chunked, idempotencyKey };
      this.answer(kind, requestId, authenticated, request, (auth) => {
        orgId = auth.orgId;
      }).then(
        ({ status, headers, payload }) => {
          try {
            exchange.send(status, headers, payload);
          } finally {
            finish();
          }
        },
        (error) => {
          try {
            sendError(exchange, requestId, error, log, orgId);
          } finally {
            finish();
          }
        },
      );
    });
  }

  /** The answer to a whole usage request, from the core; throws the ApiError to send instead. */
  private async answer(
    kind: Kind,
    requestId: string,
    authenticated: Promise<AuthContext>,
    { body, tooLarge, contentType, contentEncoding, chunked, idempotencyKey }: ReceivedRequest,
    onAuthenticated: (auth: AuthContext) => void,
  ): Promise<Reply> {
    const { usage } = this.options;
    const auth = await authenticated;
    onAuthenticated(auth);
    // In the api service's order: the media type, then the size, then the encoding and the JSON
    // (parsed alike).
    // Fastify refuses a Content-Type it has no parser for even on an empty body, and a body
    // without one (chunked counts, even when empty), so the same request gets the same 415 here.
    const declaresBody = contentType !== '' || chunked || body.length > 0 || tooLarge;
    if (declaresBody && !isJson(contentType)) {
      await usage.refuse(auth, ApiError.unsupportedMediaType());
    }
    if (tooLarge) {
      await usage.refuse(auth, ApiError.payloadTooLarge());
    }
    // Past the media type check, a request that is not JSON declared no body: it reads as null,
    // as Fastify hands it to the api's route.
    let parsed: unknown = null;
    if (isJson(contentType)) {
      try {
        parsed = parseUsageBody(body, { contentEncoding });
      } catch (error) {
        await usage.refuse(auth, error);
      }
    }
    if (kind === 'event') {
      const reply = await usage.recordEvent(auth, {
        body: parsed,
        idempotencyKey: idempotencyKey || undefined,
      });
      return { status: 201, headers: reply.headers, payload: eventResponseBody(reply.value.event) };
    }
    const reply = await usage.recordBatch(auth, parsed);
    return { status: 200, headers: reply.headers, payload: batchResponseBody(reply.value, requestId) };
  }

  /**
   * 405 and 404, as on the api service: asked with a valid key, the request counts and carries the
   * rate-limit headers (or is a 429 over the limit); without one it is answered all the same.
   */
  private refuseUnrouted(res: HttpResponse, req: HttpRequest, route: string, error: ApiError): void {
    const { authenticator, usage, log } = this.options;
    const started = performance.now();
    const method = req.getMethod();
    // uWS names methods in lower case, its JS fallback as sent
    const exchange = new Exchange(res, { bodiless: method.toLowerCase() === 'head', closing: this.closing });
    const requestId = requestIdFrom(req.getHeader(REQUEST_HEADERS.requestId));
    exchange.requestId = requestId;
    const authorization = req.getHeader(REQUEST_HEADERS.authorization);
    this.requests.begin();
    let orgId: number | undefined;
    const counted = authorization
      ? authenticator.authenticate(authorization).then(
          (auth) => {
            orgId = auth.orgId;
            return usage.refuse(auth, error);
          },
          () => Promise.reject(error),
        )
      : Promise.reject(error);
    counted
      .catch((answer: unknown) => sendError(exchange, requestId, answer, log, orgId))
      .finally(() => {
        observe(method, route, exchange, started, requestId, orgId, log);
        this.requests.finish();
      });
  }

  private opsRequest(res: HttpResponse, path: string): void {
    const exchange = new Exchange(res, { closing: this.closing });
    answerOpsRequest(path, this.options.checks, { http_server: this.options.transport.name }).then(
      (answer) => {
        const { status, contentType, body } = answer ?? {
          status: 404,
          contentType: 'text/plain',
          body: '',
        };
        exchange.send(status, { 'cache-control': 'no-store' }, body, { contentType });
      },
      (error) => {
        this.options.log.error({ err: error, path }, 'operations route failed');
        exchange.send(500, {}, JSON.stringify({ error: 'internal error' }));
      },
    );
  }
}

async function authenticate(authenticator: ApiKeyAuthenticator, header: string): Promise<AuthContext> {
  try {
    return await authenticator.authenticate(header || undefined);
  } catch (error) {
    if (error instanceof ApiError) throw error;
    // A cache miss needs the database; while it is down this is a dependency failure, not a bug.
    throw ApiError.serviceUnavailable('The database is unavailable.', 1, error);
  }
}

/** `application/json`, with parameters or not: what the api service parses as JSON. */
function isJson(contentType: string): boolean {
  if (contentType === 'application/json') return true; // as nearly every client sends it
  return contentType.split(';', 1)[0]!.trim().toLowerCase() === 'application/json';
}

function sendError(exchange: Exchange, requestId: string, error: unknown, log: Logger, orgId?: number): void {
  const apiError = error instanceof ApiError ? error : undefined;
  if ((!apiError || apiError.status >= 500) && !apiError?.expected) {
    // Internals go to the log with the request id, never to the client.
    log.error({ err: error, reqId: requestId, orgId }, 'request failed');
  }
  const { status, body } = toErrorBody(error, requestId);
  exchange.send(status, apiError?.headers ?? {}, JSON.stringify(body));
}

/** The instruments of each method, route and status, made once. */
const instruments = requestInstruments('ingest');

/** Request metrics by route pattern and status; a client that left is recorded as 499. */
function observe(
  method: string,
  route: string,
  exchange: Exchange,
  started: number,
  requestId: string,
  orgId: number | undefined,
  log: Logger,
): void {
  const status = exchange.aborted ? 499 : exchange.status;
  const verb = method === 'post' ? 'POST' : method.toUpperCase();
  const { requests, duration } = instruments(verb, route, status);
  const seconds = (performance.now() - started) / 1000;
  requests.inc();
  duration.observe(seconds);
  // 20,000 lines a second would cost more than the requests: successes are logged at debug. A 503
  // is a dependency outage (logged once by its guard) or a drain, not a failure of this request.
  const level = status >= 500 && status !== 503 ? 'error' : status >= 300 ? 'info' : 'debug';
  if (!log.isLevelEnabled(level)) return;
  log[level](
    { reqId: requestId, orgId, method: verb, route, status, ms: Math.round(seconds * 100_000) / 100 },
    'request',
  );
}
