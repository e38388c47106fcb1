import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.js';

/**
 * One registry per process. In `npm start` every service runs in one process and shares it, which
 * is what a scrape of that process should see. Instruments are defined here, in one place, so a
 * dashboard author finds every name (and its labels) on one page. The ones counted per request or
 * per usage event are hot-metrics (same exposition, a fraction of the cost).
 */
export const registry = new Registry();
// The event-loop lag is sampled by a timer every 100 ms rather than prom-client's 10: at 10 that
// timer alone woke an idle process 100 times a second, a cost every service paid doing nothing
// (bench/RESULTS.md). The lag percentiles mean the same, read from a tenth of the samples.
collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export const httpRequests = new HotCounter({
  name: 'billing_http_requests_total',
  help: 'HTTP requests answered, by service, method, route pattern and status.',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new HotHistogram({
  name: 'billing_http_request_duration_seconds',
  help: 'Time from request to response, by service, method, route pattern and status.',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export interface RequestInstruments {
  requests: ReturnType<typeof httpRequests.labels>;
  duration: ReturnType<typeof httpRequestDuration.labels>;
}

/**
 * A service's request counter and histogram children by method, route pattern and status, made
 * once each (labels cost a hash per call: keep the child where it runs per request), by nested
 * maps so that finding one builds no key. Bounded: route patterns, not paths.
 */
export function requestInstruments(
  service: string,
): (method: string, route: string, status: number) => RequestInstruments {
  const byRoute = new Map<string, Map<string, Map<number, RequestInstruments>>>();
  return (method, route, status) => {
    let byMethod = byRoute.get(route);
    if (!byMethod) {
      byMethod = new Map();
      byRoute.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (!byStatus) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let found = byStatus.get(status);
    if (!found) {
      const labels = { service, method, route, status: String(status) };
      found = { requests: httpRequests.labels(labels), duration: httpRequestDuration.labels(labels) };
      byStatus.set(status, found);
    }
    return found;
  };
}

export const rateLimitRejections = new Counter({
  name: 'billing_rate_limit_rejections_total',
  help: 'Requests refused with 429, by the organization plan.',
  labelNames: ['plan'] as const,
  registers: [registry],
});

export const ingestEvents = new HotCounter({
  name: 'billing_ingest_events_total',
  help: 'Usage events by outcome (accepted, deduplicated, rejected) and rejection reason (error code).',
  labelNames: ['outcome', 'reason'] as const,
  registers: [registry],
});

export const kafkaProduceDuration = new HotHistogram({
  name: 'billing_kafka_produce_duration_seconds',
  help: 'Time for one produce call to be acknowledged by the log.',
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const kafkaProduceCalls = new HotCounter({
  name: 'billing_kafka_produce_calls_total',
  help: 'Produce calls by path: leader (written straight to the partition leaders) or kafkajs (its producer, while the route is unknown or after a refusal).',
  labelNames: ['path'] as const,
  registers: [registry],
});

export const kafkaProduceBatchSize = new HotHistogram({
  name: 'billing_kafka_produce_batch_size',
  help: 'Events per produce call (concurrent requests gathered during the linger).',
  buckets: [1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000],
  registers: [registry],
});

export const ingestNativeServer = new Gauge({
  name: 'billing_ingest_native_server',
  help: "1 while the ingest service serves on uWebSockets.js' native code, 0 on Node's HTTP server.",
  registers: [registry],
});

export const sinkLagMessages = new Gauge({
  name: 'billing_sink_lag_messages',
  help: 'Messages in the log not yet written by the sink (high watermark minus committed offset).',
  labelNames: ['sink'] as const,
  registers: [registry],
});

export const sinkLagSeconds = new Gauge({
  name: 'billing_sink_lag_seconds',
  help: 'Age of the oldest event the sink has read and not written yet (0 when it is caught up).',
  labelNames: ['sink'] as const,
  registers: [registry],
});

export const sinkWriteDuration = new Histogram({
  name: 'billing_sink_write_duration_seconds',
  help: 'Time to write one batch to the sink store.',
  labelNames: ['sink'] as const,
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const sinkEventsWritten = new Counter({
  name: 'billing_sink_events_written_total',
  help: 'Events handed to the sink store (redeliveries included; the store drops duplicates).',
  labelNames: ['sink'] as const,
  registers: [registry],
});

export const alertReads = new Counter({
  name: 'billing_alert_reads_total',
  help: 'usage_quantity alerts read by the alerts group, by why: suspect (its bound reached the threshold, a void, no bound), refresh (skipped too long), settle (read again until a reading counts its batch).',
  labelNames: ['reason'] as const,
  registers: [registry],
});

export const webhookAttempts = new Counter({
  name: 'billing_webhook_attempts_total',
  help: 'Webhook delivery attempts by result (success, failure, timeout, connection_error, refused).',
  labelNames: ['result'] as const,
  registers: [registry],
});

export const webhookDeliveryDuration = new Histogram({
  name: 'billing_webhook_delivery_duration_seconds',
  help: 'Duration of one delivery attempt, request to response.',
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

export const billingRunInvoices = new Counter({
  name: 'billing_billing_run_invoices_total',
  help: 'Invoices created by billing runs.',
  registers: [registry],
});

export const billingRunDuration = new Histogram({
  name: 'billing_billing_run_duration_seconds',
  help: 'Duration of a whole billing run.',
  buckets: [0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600],
  registers: [registry],
});

export const METRICS_CONTENT_TYPE = registry.contentType;

export function renderMetrics(): Promise<string> {
  return registry.metrics();
}

/** Seconds since `startedAt` (from `process.hrtime.bigint()`), for histogram observations. */
export function secondsSince(startedAt: bigint): number {
  return Number(process.hrtime.bigint() - startedAt) / 1e9;
}
