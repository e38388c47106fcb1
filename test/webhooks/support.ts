import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { Database } from '../../libs/db/index.js';
import { emitDomainEvent } from '../../libs/events/index.js';
import type { Logger } from '../../libs/log/index.js';
import type { EmittedEventType } from '../../libs/schemas/index.js';
import { type DispatcherSettings, WebhookDispatcher } from '../../libs/webhooks/index.js';
import { buildApiApp } from '../../services/api/app.js';
import type { ApiInstance } from '../../services/api/types.js';
import type { TestApi } from '../helpers/api.js';
import { runLogger } from '../helpers/run-log.js';

export interface ReceivedDelivery {
  /** The request path and query. */
  url: string;
  headers: IncomingHttpHeaders;
  /** The raw body, exactly as received. */
  body: string;
  receivedAt: number;
}

export interface ReceiverAnswer {
  status?: number;
  body?: string;
  headers?: Record<string, string>;
  /** Wait this long before answering (a hanging receiver). */
  delayMs?: number;
}

export type Responder = (delivery: ReceivedDelivery, count: number) => ReceiverAnswer;

/** A real HTTP receiver on 127.0.0.1 (or another loopback address) that records every request it gets. */
export interface Receiver {
  url: string;
  port: number;
  deliveries: ReceivedDelivery[];
  respond(responder: Responder): void;
  /** Resolves once `count` requests arrived (or rejects after `timeoutMs`). */
  waitFor(count: number, timeoutMs?: number): Promise<ReceivedDelivery[]>;
  close(): Promise<void>;
}

export async function startReceiver(
  responder: Responder = () => ({ status: 200 }),
  options: { host?: string; port?: number } = {},
): Promise<Receiver> {
  const host = options.host ?? '127.0.0.1';
  let current = responder;
  const deliveries: ReceivedDelivery[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const delivery = {
        url: request.url ?? '/',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        receivedAt: Date.now(),
      };
      deliveries.push(delivery);
      const answer = current(delivery, deliveries.length);
      const send = () => {
        if (response.destroyed) return;
        response.writeHead(answer.status ?? 200, { 'content-type': 'text/plain', ...answer.headers });
        response.end(answer.body ?? 'ok');
      };
      if (answer.delayMs) setTimeout(send, answer.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/hooks`,
    port,
    deliveries,
    respond(next) {
      current = next;
    },
    async waitFor(count, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (deliveries.length < count) {
        if (Date.now() > deadline) {
          throw new Error(`receiver got ${deliveries.length} of ${count} deliveries in ${timeoutMs} ms`);
        }
        await sleep(10);
      }
      return deliveries.slice(0, count);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Settings that make retries and timeouts fast enough for tests. */
export const FAST_SETTINGS: DispatcherSettings = {
  pollMs: 100,
  concurrency: 10,
  endpointConcurrency: 10,
  timeoutMs: 1000,
  maxAttempts: 5,
  retryDelaysMs: [50, 50, 50, 50],
  allowLocalhost: true,
};

export function startDispatcher(
  db: Database,
  settings: Partial<DispatcherSettings> = {},
  log: Logger = runLogger('dispatcher'),
): WebhookDispatcher {
  const dispatcher = new WebhookDispatcher(db, log, { ...FAST_SETTINGS, ...settings });
  dispatcher.start();
  return dispatcher;
}

/** A domain event committed the way the billing engine commits them (outbox, same transaction). */
export function emit(
  db: Database,
  orgId: number,
  type: EmittedEventType,
  data: Record<string, unknown> = { id: 'x', object: 'test' },
): Promise<number> {
  return db.transaction((tx) => emitDomainEvent(tx, { orgId, type, data }));
}

export interface StoredEvent {
  id: string;
  endpoint_id: string;
  event_type: string;
  status: string;
  attempts: number;
  last_response_code: number | null;
  last_response_body: string | null;
  payload: string;
}

/** An endpoint's events in the order they happened (outbox order: events fanned out together share created_at). */
export async function storedEvents(db: Database, endpointId: string): Promise<StoredEvent[]> {
  const { rows } = await db.query<StoredEvent>(
    `SELECT id, endpoint_id, event_type, status, attempts, last_response_code, last_response_body, payload
     FROM webhook_events WHERE endpoint_id = $1 ORDER BY outbox_id, id`,
    [endpointId],
  );
  return rows;
}

export async function attemptsOf(
  db: Database,
  eventId: string,
): Promise<{ attempt: number; response_code: number; response_body: string | null; duration_ms: number }[]> {
  const { rows } = await db.query(
    'SELECT attempt, response_code, response_body, duration_ms FROM webhook_attempts WHERE webhook_event_id = $1 ORDER BY attempt',
    [eventId],
  );
  return rows as never;
}

/** Polls `read` until `done` holds for its value. */
export async function eventually<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${timeoutMs} ms; last value: ${JSON.stringify(value)}`);
    await sleep(25);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether the standardwebhooks package accepts `delivery` with `secret`, exactly as a receiver calls it. */
export function standardVerifies(
  secret: string,
  delivery: Pick<ReceivedDelivery, 'body' | 'headers'>,
): boolean {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>);
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
}

/** The Standard Webhooks signatures of a delivery (`v1,...` entries of webhook-signature). */
export function standardSignatures(delivery: Pick<ReceivedDelivery, 'headers'>): string[] {
  return String(delivery.headers['webhook-signature'] ?? '').split(' ');
}

/** The api as production runs it (WEBHOOK_ALLOW_LOCALHOST false), on a test api's platform. */
export function buildApiWithoutLocalhost(api: TestApi): Promise<ApiInstance> {
  return buildApiApp({
    platform: api.platform,
    bodyLimit: api.config.BODY_LIMIT_BYTES,
    invoiceCacheBytes: 1024 * 1024,
    publicBaseUrl: undefined,
    webhookAllowLocalhost: false,
    webhookMaxAttempts: api.config.WEBHOOK_MAX_ATTEMPTS,
    usageIngest: api.usage.ingest,
    usageRead: api.usage.readStores,
  });
}

/** Registers an endpoint through the api (201 expected) and returns it with its secret. */
export async function registerEndpoint(
  api: TestApi,
  apiKey: string,
  body: Record<string, unknown>,
): Promise<{ id: string; secret: string; secret_key_id: string; status: string; updated_at: string }> {
  const response = await api.request({
    method: 'POST',
    path: '/webhook-endpoints',
    key: apiKey,
    payload: body,
  });
  if (response.statusCode !== 201)
    throw new Error(`endpoint not created: ${response.statusCode} ${response.body}`);
  return response.json().data;
}
