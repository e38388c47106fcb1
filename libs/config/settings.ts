import { z } from 'zod';

/** Digits only: `1e3`, `0x10` or ` 8` are typos here, not numbers to guess at. */
const digits = (check: z.ZodNumber) =>
  z.string().regex(/^\d+$/, 'must be a whole number (digits only)').transform(Number).pipe(check);
const port = (fallback: number) => digits(z.number().int().min(0).max(65535)).default(fallback);
const positiveInt = (fallback: number) => digits(z.number().int().positive()).default(fallback);
/** A delay a timer waits: Node's timers hold at most 2^31 - 1 ms and fire at once beyond it. */
const timerMs = (fallback: number) =>
  digits(
    z
      .number()
      .int()
      .positive()
      .max(2_147_483_647, 'must be at most 2147483647 ms (about 24.8 days), the longest a timer waits'),
  ).default(fallback);
const flag = () =>
  z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');
/** A URL of one of `protocols` that names a host (Postgres may name it as `?host=/socket/dir`). */
const url = (protocols: string[]) =>
  z.string().refine(
    (value) => {
      try {
        const parsed = new URL(value);
        return (
          protocols.includes(parsed.protocol) && (parsed.hostname !== '' || parsed.searchParams.has('host'))
        );
      } catch {
        return false;
      }
    },
    `must be a URL with a host (${protocols.join(' or ')})`,
  );
const list = (item: z.ZodString) =>
  z
    .string()
    .transform((value) =>
      value
        .split(',')
        .map((part) => part.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item).min(1));
/** `host:port` of a Kafka broker, the port a TCP port (kafkajs would retry `:99999` forever). */
const broker = z
  .string()
  .regex(/^[^\s:]+:\d+$/, { message: 'must be host:port', abort: true })
  .refine((value) => {
    const port = Number(value.split(':')[1]);
    return port >= 1 && port <= 65535;
  }, 'must be host:port with a port from 1 to 65535');
const msList = z
  .string()
  .transform((value) => value.split(',').map((part) => part.trim()))
  .pipe(z.array(z.string().regex(/^\d+$/, 'must be whole numbers of ms, comma separated')).min(1))
  .transform((parts) => parts.map(Number));

/**
 * Settings every process reads. An unset URL selects the embedded twin of that port (docs/architecture.md, "Two modes"):
 * no DATABASE_URL -> PGlite under DATA_DIR, no REDIS_URL -> in-process maps, no KAFKA_BROKERS ->
 * in-process log, no CLICKHOUSE_URL -> usage totals from Postgres.
 */
const common = z.object({
  APP_ENV: z.enum(['development', 'test', 'production']).default('development'),
  HOST: z.string().min(1).default('127.0.0.1'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PUBLIC_BASE_URL: url(['http:', 'https:']).optional(),
  DATABASE_URL: url(['postgres:', 'postgresql:']).optional(),
  DATABASE_POOL_SIZE: positiveInt(10),
  /** The longest one SQL statement may run before it fails and its connection is dropped. */
  DATABASE_QUERY_TIMEOUT_MS: timerMs(60_000),
  /**
   * A service's statement that waits this long has Postgres probed on a connection of its own; if
   * that gets no answer within as long, Postgres is down: waiting requests get 503 at once, new
   * ones too until it answers again.
   */
  DATABASE_STALL_MS: timerMs(2000),
  DATA_DIR: z.string().min(1).default('./data'),
  EMBEDDED_DB_PORT: port(54329),
  REDIS_URL: url(['redis:', 'rediss:']).optional(),
  REDIS_KEY_PREFIX: z.string().default(''),
  /** The longest a command waits for Redis; past it Redis is down and requests get 503 at once. */
  REDIS_COMMAND_TIMEOUT_MS: timerMs(2000),
  KAFKA_BROKERS: list(broker).optional(),
  KAFKA_CLIENT_ID: z.string().min(1).default('billing'),
  KAFKA_USAGE_TOPIC: z.string().min(1).default('usage.events'),
  KAFKA_TOPIC_PARTITIONS: positiveInt(6),
  /**
   * Prefixes the sinks' consumer group names (`pg-sink`, `ch-sink`), e.g. per deployment on a shared
   * cluster. Common: billing reads the sinks' progress under these names.
   */
  KAFKA_CONSUMER_GROUP_PREFIX: z
    .string()
    .regex(/^[\w.-]*$/)
    .default(''),
  KAFKA_LINGER_MS: digits(z.number().int().min(0).max(1000)).default(5),
  /**
   * The longest a usage request waits for the log's acknowledgement; past it Kafka is down, the
   * request gets 503 (never 201) and so do new ones until the broker answers again.
   */
  KAFKA_ACK_TIMEOUT_MS: timerMs(3000),
  CLICKHOUSE_URL: url(['http:', 'https:']).optional(),
  CLICKHOUSE_DATABASE: z.string().regex(/^\w+$/).default('billing'),
  AUTH_CACHE_TTL_SECONDS: positiveInt(30),
  AUTH_CACHE_MAX_ENTRIES: positiveInt(10_000),
  IDEMPOTENCY_TTL_DAYS: positiveInt(30),
  /**
   * Whether ingest keeps the per-item period counters the entitlement checks read, in its dedup
   * step (docs/decisions.md, "Where the entitlement counter lives and why"). false only to
   * measure ingest without them (bench/entitlements): entitlement reads then sum Postgres after
   * the pg-sink caught up. The same value in every api and ingest process.
   */
  USAGE_COUNTER: flag().default(true),
  SHUTDOWN_TIMEOUT_MS: timerMs(10_000),
});

const apiOnly = z.object({
  PORT: port(8080),
  BODY_LIMIT_BYTES: positiveInt(1024 * 1024),
  /** Memory for invoices' public JSON kept between list requests, in MiB. */
  INVOICE_CACHE_MB: positiveInt(64),
  /**
   * Base of the links to pages for people (portal sessions, hosted invoices), e.g. a domain of
   * their own behind the proxy; unset, the api's own URL (PUBLIC_BASE_URL, else the request's).
   */
  PUBLIC_URL: url(['http:', 'https:']).optional(),
});

const ingestOnly = z.object({
  INGEST_PORT: port(8081),
  INGEST_BODY_LIMIT_BYTES: positiveInt(1024 * 1024),
  /**
   * True when every request reaches the ingest service through a proxy that forwards only exact,
   * printable header values (deploy/nginx does): it then serves on uWebSockets.js, whose parser
   * trims bytes from 0x80 up off header values. Otherwise on Node's HTTP server, which reads
   * them byte for byte.
   */
  INGEST_TRUSTED_PROXY: flag().default(false),
  /**
   * Where uWebSockets.js has no native binary (any Node but 18 and 20, any platform but Linux x64),
   * serve on Node's HTTP server instead of refusing to start.
   */
  INGEST_ALLOW_FALLBACK_SERVER: flag().default(false),
});

const sinkOnly = z.object({
  /** The sinks' health and metrics port (they serve no public route). */
  SINKS_PORT: port(8083),
  SINK_BATCH_SIZE: positiveInt(5000),
  SINK_FLUSH_MS: timerMs(200),
  /**
   * Whether this sinks process also runs the guardrails group (alerts, automatic top-ups). false:
   * only the stores' groups; the policies wait, their group's offsets kept, until a process runs it.
   */
  SINKS_GUARDRAILS: flag().default(true),
});

/** Read where webhook URLs are accepted (api) and where they are called (dispatcher). */
const webhookPolicy = z.object({
  /** Unset: allowed everywhere but APP_ENV=production (see withWebhookDefaults). */
  WEBHOOK_ALLOW_LOCALHOST: flag().optional(),
  /** Attempts per event, and per series of attempts a recovery starts (api). */
  WEBHOOK_MAX_ATTEMPTS: positiveInt(5),
});

const dispatcherOnly = webhookPolicy.extend({
  DISPATCHER_PORT: port(8082),
  WEBHOOK_RETRY_DELAYS_MS: msList.default([1000, 2000, 4000, 8000]),
  WEBHOOK_TIMEOUT_MS: timerMs(10_000),
  DISPATCHER_POLL_MS: timerMs(1000),
  DISPATCHER_CONCURRENCY: positiveInt(50),
  DISPATCHER_ENDPOINT_CONCURRENCY: positiveInt(10),
});

const billingOnly = z.object({
  /** How often `npm start` runs the billing run in-process; deployments use a cron job instead. */
  BILLING_INTERVAL_SECONDS: positiveInt(3600),
});

function withWebhookDefaults<T extends { APP_ENV: string; WEBHOOK_ALLOW_LOCALHOST?: boolean | undefined }>(
  config: T,
): T & { WEBHOOK_ALLOW_LOCALHOST: boolean } {
  return {
    ...config,
    WEBHOOK_ALLOW_LOCALHOST: config.WEBHOOK_ALLOW_LOCALHOST ?? config.APP_ENV !== 'production',
  };
}

export const apiSettings = common
  .extend(apiOnly.shape)
  .extend(webhookPolicy.shape)
  .transform(withWebhookDefaults);
export const ingestSettings = common.extend(ingestOnly.shape);
export const sinkSettings = common.extend(sinkOnly.shape);
export const dispatcherSettings = common.extend(dispatcherOnly.shape).transform(withWebhookDefaults);
export const consoleSettings = common
  .extend(billingOnly.shape)
  // the links it prints (seed's base URL, invoices' hosted_url) are the api's
  .extend({ PORT: apiOnly.shape.PORT, PUBLIC_URL: apiOnly.shape.PUBLIC_URL });
export const embeddedSettings = common
  .extend(apiOnly.shape)
  .extend(ingestOnly.shape)
  // The sinks and the dispatcher run inside `npm start`: no ports of their own to check.
  .extend(sinkOnly.omit({ SINKS_PORT: true, SINKS_GUARDRAILS: true }).shape)
  .extend(dispatcherOnly.omit({ DISPATCHER_PORT: true }).shape)
  .extend(billingOnly.shape)
  .transform(withWebhookDefaults);

export type CommonConfig = z.output<typeof common>;
export type ApiConfig = z.output<typeof apiSettings>;
export type IngestConfig = z.output<typeof ingestSettings>;
export type SinkConfig = z.output<typeof sinkSettings>;
export type DispatcherConfig = z.output<typeof dispatcherSettings>;
export type ConsoleConfig = z.output<typeof consoleSettings>;
export type EmbeddedConfig = z.output<typeof embeddedSettings>;
