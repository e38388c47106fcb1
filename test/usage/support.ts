import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { Queryable } from '../../libs/db/index.js';
import { BASE_PATH } from '../../libs/schemas/index.js';
import {
  startUsageSinks,
  type UsageEventRecord,
  type UsagePipeline,
  type UsageSink,
  type UsageSinks,
} from '../../libs/usage/index.js';
import { type IngestServer, startIngestServer } from '../../services/ingest/server.js';
import { ingestReadinessChecks, ingestTransport } from '../../services/ingest/start.js';
import { basicCatalog, customerIn, subscribe } from '../billing/fixtures.js';
import { startTestApi, type TestApi } from '../helpers/api.js';
import { insertCustomer, insertProduct, insertSubscription } from '../helpers/billing-fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { createTestOrg, type TestOrg } from '../helpers/fixtures.js';
import { type ServiceProcess, startTs } from '../helpers/processes.js';
import { runLogger } from '../helpers/run-log.js';
import { testServices, uniqueName } from '../helpers/services.js';

/** The two modes of docs/architecture.md, "Two modes" the usage rules must hold in. */
/** An accepted event of `subscriptionItemId` as the log carries it, under a fresh key, occurring now. */
export function usageEventRecord(
  orgId: number,
  subscriptionItemId: number,
  quantity: string,
  recordedAtMs = Date.now(),
): UsageEventRecord {
  return {
    id: randomUUID(),
    orgId,
    subscriptionItemId,
    idempotencyKey: uniqueName('event'),
    quantity,
    occurredAtMs: Date.now(),
    recordedAtMs,
  };
}

export type UsageMode = 'redis+kafka' | 'in-process';
export const MODES: UsageMode[] = ['redis+kafka', 'in-process'];

export interface UsageResponse {
  status: number;
  headers: Record<string, string>;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
  body: any;
}

export interface UsageRequest {
  key?: string;
  /** The Idempotency-Key header. */
  idempotencyKey?: string;
  body?: unknown;
  /** Sent as is instead of `body` (bytes for a body that is not UTF-8). */
  rawBody?: string | Buffer;
  /** application/json unless given; null sends none (give a Buffer body: fetch types a string). */
  contentType?: string | null;
  headers?: Record<string, string>;
  /** A header sent on several lines, each value its own line (fetch would join them into one). */
  repeatedHeader?: { name: string; values: string[] };
}

/** One HTTP front end of the ingest core. */
export interface UsageFrontEnd {
  /** uWebSockets.js, Node's HTTP server (both the ingest service) or the api service. */
  name: 'uws' | 'node' | 'api';
  post(
    path: '/usage/events' | '/usage/events/' | '/usage/events?via=query' | '/usage/events/batch',
    request: UsageRequest,
  ): Promise<UsageResponse>;
}

export interface UsageStack {
  api: TestApi;
  /** The ingest service on uWebSockets.js (as behind deploy/nginx). */
  ingest: IngestServer;
  /** The ingest service on Node's HTTP server (its default without a checking proxy). */
  nodeIngest: IngestServer;
  frontEnds: UsageFrontEnd[];
  sinks: UsageSinks | undefined;
  topic: string | undefined;
  close(): Promise<void>;
}

export interface UsageFixture {
  stack: UsageStack;
  org: TestOrg;
  items: UsageItems;
}

/**
 * A usage stack with one organization and its items, started before the calling describe block's
 * tests and closed after them. Its fields are filled in by beforeAll: read them inside the tests.
 */
export function useUsageStack(
  mode: UsageMode,
  options?: Parameters<typeof startUsageStack>[1],
): UsageFixture {
  const fixture = {} as UsageFixture;
  beforeAll(async () => {
    fixture.stack = await startUsageStack(mode, options);
    fixture.org = await createTestOrg(fixture.stack.api.platform.db);
    fixture.items = await createUsageItems(fixture.stack.api.platform.db, fixture.org.orgId);
  });
  afterAll(() => fixture.stack?.close());
  return fixture;
}

/**
 * Both front ends on ONE ingest core, as `npm start` runs them: the api service (through inject)
 * and the uWS ingest service (over real HTTP). `redis+kafka` publishes to a topic of the file's
 * own on the run's Kafka test broker, with the Postgres sink consuming it when `sinks` is set;
 * `in-process` uses the embedded twins (memory store, in-process log writing to Postgres).
 */
export async function startUsageStack(
  mode: UsageMode,
  options: { sinks?: boolean; env?: Record<string, string | undefined> } = {},
): Promise<UsageStack> {
  const topic = mode === 'redis+kafka' ? uniqueName('usage') : undefined;
  const api = await startTestApi({
    ...(mode === 'in-process' ? { redis: false } : {}),
    env: {
      ...(topic
        ? {
            KAFKA_BROKERS: testServices().kafkaBrokers.join(','),
            KAFKA_USAGE_TOPIC: topic,
            KAFKA_CONSUMER_GROUP_PREFIX: `${topic}-`,
          }
        : {}),
      ...options.env,
    },
  });
  const ingest = await startIngestFor(api, api.usage);
  const nodeIngest = await startIngestFor(api, api.usage, { transport: 'node-http', logName: 'ingest-node' });
  let sinks: UsageSinks | undefined;
  if (topic && options.sinks) {
    sinks = await startUsageSinks({
      config: { ...api.config, SINK_FLUSH_MS: 50 },
      db: api.platform.db,
      log: runLogger('sinks'),
    });
  }
  return {
    api,
    ingest,
    nodeIngest,
    sinks,
    topic,
    frontEnds: [uwsFrontEnd(ingest.port), uwsFrontEnd(nodeIngest.port, 'node'), apiFrontEnd(api)],
    async close() {
      await ingest.close();
      await nodeIngest.close();
      await sinks?.stop();
      await api.close();
    },
  };
}

/**
 * The ingest service on a pipeline of the api's platform, as the ingest process runs it: on
 * uWebSockets.js (as behind deploy/nginx, INGEST_TRUSTED_PROXY=true) unless `transport` says
 * Node's HTTP server (the default of a process without a checking proxy in front).
 */
export function startIngestFor(
  api: TestApi,
  pipeline: UsagePipeline,
  options: { transport?: 'uws' | 'node-http'; logName?: string; port?: number } = {},
): Promise<IngestServer> {
  return startIngestServer({
    transport: ingestTransport({ trustedProxy: (options.transport ?? 'uws') === 'uws' }),
    host: '127.0.0.1',
    port: options.port ?? 0,
    bodyLimit: api.config.INGEST_BODY_LIMIT_BYTES,
    authenticator: api.platform.authenticator,
    usage: pipeline.ingest,
    checks: () => ingestReadinessChecks(api.platform, pipeline),
    log: runLogger(options.logName ?? 'ingest'),
  });
}

/** An ingest server over real HTTP; `name` says which transport it runs on. */
export function uwsFrontEnd(port: number, name: 'uws' | 'node' = 'uws'): UsageFrontEnd {
  return {
    name,
    async post(path, request) {
      if (request.repeatedHeader) return rawPost(port, `${BASE_PATH}${path}`, request);
      const response = await fetch(`http://127.0.0.1:${port}${BASE_PATH}${path}`, {
        method: 'POST',
        headers: requestHeaders(request),
        body: request.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body)),
      });
      const text = await response.text();
      return {
        status: response.status,
        headers: Object.fromEntries(response.headers),
        body: text ? JSON.parse(text) : undefined,
      };
    },
  };
}

export function apiFrontEnd(api: TestApi): UsageFrontEnd {
  return {
    name: 'api',
    async post(path, request) {
      const repeated = request.repeatedHeader;
      const response = await api.app.inject({
        method: 'POST',
        url: `${BASE_PATH}${path}`,
        headers: { ...requestHeaders(request), ...(repeated ? { [repeated.name]: repeated.values } : {}) },
        ...(request.rawBody !== undefined
          ? { payload: request.rawBody }
          : request.body !== undefined
            ? { payload: JSON.stringify(request.body) }
            : {}),
      });
      return {
        status: response.statusCode,
        headers: Object.fromEntries(
          Object.entries(response.headers).map(([name, value]) => [name, String(value)]),
        ),
        body: response.body ? response.json() : undefined,
      };
    },
  };
}

/** One HTTP/1.1 request written by hand, so a header can go on several lines. */
async function rawPost(port: number, path: string, request: UsageRequest): Promise<UsageResponse> {
  const body = request.rawBody ?? JSON.stringify(request.body ?? {});
  const lines = [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1:${port}`,
    ...Object.entries(requestHeaders(request)).map(([name, value]) => `${name}: ${value}`),
    ...(request.repeatedHeader?.values ?? []).map((value) => `${request.repeatedHeader!.name}: ${value}`),
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  // Written, not ended: uWS drops a half-closed connection; `Connection: close` ends it after the answer.
  const socket = net.connect(port, '127.0.0.1');
  socket.write(Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), Buffer.from(body)]));
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const [head = '', payload = ''] = text.split('\r\n\r\n', 2);
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  return {
    status: Number(statusLine.split(' ')[1]),
    headers: Object.fromEntries(
      headerLines.map((line) => [
        line.slice(0, line.indexOf(':')).toLowerCase(),
        line.slice(line.indexOf(':') + 1).trim(),
      ]),
    ),
    body: payload ? JSON.parse(payload) : undefined,
  };
}

function requestHeaders(request: UsageRequest): Record<string, string> {
  return {
    ...((request.body !== undefined || request.rawBody !== undefined) && request.contentType !== null
      ? { 'content-type': request.contentType ?? 'application/json' }
      : {}),
    ...(request.key ? { authorization: `Bearer ${request.key}` } : {}),
    ...(request.idempotencyKey !== undefined ? { 'idempotency-key': request.idempotencyKey } : {}),
    ...request.headers,
  };
}

export interface UsageItems {
  metered: number;
  otherMetered: number;
  licensed: number;
}

/** A customer with a subscription holding two metered items and a licensed one. */
export async function createUsageItems(db: Queryable, orgId: number): Promise<UsageItems> {
  const product = await insertProduct(db, orgId, {
    name: 'API calls',
    pricingType: 'usage',
    category: 'usage',
  });
  const seat = await insertProduct(db, orgId, { name: 'Seat', pricingType: 'recurring' });
  const customer = await insertCustomer(db, orgId, { name: 'Usage customer' });
  const { itemIds } = await insertSubscription(db, orgId, {
    customerId: customer.id,
    items: [
      { productId: product.id, usageType: 'metered' },
      { productId: product.id, usageType: 'metered' },
      { productId: seat.id, usageType: 'licensed' },
    ],
  });
  return { metered: itemIds[0]!, otherMetered: itemIds[1]!, licensed: itemIds[2]! };
}

export async function usageRows(
  db: Queryable,
  orgId: number,
): Promise<{ id: string; subscription_item_id: number; idempotency_key: string; quantity: string }[]> {
  const { rows } = await db.query(
    `SELECT id, subscription_item_id, idempotency_key, quantity::text AS quantity
       FROM usage_events WHERE org_id = $1 ORDER BY recorded_at, id`,
    [orgId],
  );
  return rows as never;
}

/** Polls until `check` passes (sinks are asynchronous), failing with its last error after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

let keyCounter = 0;
/** A fresh idempotency key. */
export function freshKey(label = 'k'): string {
  return `${label}-${process.pid}-${Date.now().toString(36)}-${++keyCounter}`;
}

/** The line the ingest service process prints once it listens; group 1 is the port. */
export const INGEST_LISTENING = /ingest service listening on http:\/\/127\.0\.0\.1:(\d+)/;

export interface ServiceProcesses {
  /** This file's database (set in beforeAll). */
  readonly database: TestDatabase;
  /** Starts a service process (see startTs); afterAll kills it if it still runs. */
  start: typeof startTs;
  /**
   * The env of a service process on this file's database, with no Redis, Kafka or ClickHouse
   * (the embedded twins) unless `overrides` name them.
   */
  env(overrides?: Record<string, string | undefined>): Record<string, string | undefined>;
}

/**
 * For a file that tests the usage services as real processes (`npm run start:ingest`,
 * `start:sinks`): a database of its own, created in beforeAll; afterAll kills every process
 * started, whatever failed, before it drops the database. Call it at the top of a describe.
 */
export function serviceProcesses(databaseLabel: string): ServiceProcesses {
  const started: ServiceProcess[] = [];
  let database: TestDatabase | undefined;
  const current = () => {
    if (!database) throw new Error('the database is created in beforeAll');
    return database;
  };
  beforeAll(async () => {
    database = await createTestDatabase(databaseLabel);
  });
  // what a failed test's processes printed (warnings and errors) is the account of its failure
  let shown = 0;
  afterEach(({ task }) => {
    if (task.result?.state === 'fail') {
      for (const [n, service] of started.slice(shown).entries())
        console.error(`--- process ${shown + n + 1} of "${task.name}" printed:\n${service.output()}`);
    }
    shown = started.length;
  });
  afterAll(async () => {
    await Promise.all(started.map((service) => service.kill()));
    await database?.drop();
  });
  return {
    get database() {
      return current();
    },
    async start(...args) {
      const service = await startTs(...args);
      started.push(service);
      return service;
    },
    env(overrides = {}) {
      return {
        APP_ENV: 'test',
        LOG_LEVEL: 'warn',
        HOST: '127.0.0.1',
        DATABASE_URL: current().url,
        REDIS_URL: undefined,
        KAFKA_BROKERS: undefined,
        CLICKHOUSE_URL: undefined,
        ...overrides,
      };
    },
  };
}

/**
 * A new customer of the organization with one metered item (API calls, 1.00 a call) on a
 * subscription running since the first of this month (UTC): usage dated now falls in its period.
 */
export async function meteredSubscriptionThisMonth(db: Queryable, orgId: number) {
  const { apiCalls } = await basicCatalog(db, orgId);
  const customerId = await customerIn(db, orgId, { state_province: 'AB' });
  const now = new Date();
  const subscription = await subscribe(
    db,
    orgId,
    {
      customer_id: customerId,
      items: [{ product_id: apiCalls }],
      start_date: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
    },
    now,
  );
  return { customerId, subscription, item: subscription.items[0]!.id };
}

/** A sink that writes nothing and records each assignment it is told of (whether it holds the whole log). */
export function assignmentListener(): { calls: boolean[]; sink: UsageSink } {
  const calls: boolean[] = [];
  return {
    calls,
    sink: {
      name: 'listener',
      write: async () => {},
      writeVoids: async () => {},
      assigned: (whole) => calls.push(whole),
    },
  };
}
