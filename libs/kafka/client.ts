import { Kafka, type LogEntry, logLevel } from 'kafkajs';
import { isSocketErrorCode } from '../dependency-guard/index.js';
import type { Logger } from '../log/index.js';
// before any client is made: see the file
import './kafkajs-adapter.js';

export interface KafkaSettings {
  brokers: string[];
  clientId: string;
}

/**
 * A kafkajs client. `fail-fast` (producers on a request path): an unreachable broker surfaces
 * within about a second, so ingest answers 503 and the client retries, instead of holding requests
 * for kafkajs' default 30 s of retries. `patient` (consumers): retries for minutes, so a short
 * outage does not crash the consumer, whose restart would wait out the old member's session
 * before the group rebalances. kafkajs' own log lines go to our logger under `kafka`.
 */
/** How long a fail-fast client waits for a broker's answer to one request. */
export const FAIL_FAST_REQUEST_TIMEOUT_MS = 5000;

export function createKafka(
  settings: KafkaSettings,
  log?: Logger,
  retries: 'fail-fast' | 'patient' = 'fail-fast',
): Kafka {
  return new Kafka({
    clientId: settings.clientId,
    brokers: settings.brokers,
    connectionTimeout: 1000,
    requestTimeout: retries === 'patient' ? 30_000 : FAIL_FAST_REQUEST_TIMEOUT_MS,
    retry:
      retries === 'patient'
        ? { initialRetryTime: 200, maxRetryTime: 5000, retries: 50 }
        : { initialRetryTime: 100, maxRetryTime: 1000, retries: 3 },
    logLevel: log ? logLevel.WARN : logLevel.NOTHING,
    logCreator: () => {
      const repeats = new RepeatedLines();
      return (entry: LogEntry) => {
        if (!log) return;
        const { message, timestamp: _timestamp, ...extra } = entry.log;
        // While a broker is down kafkajs warns once per request and retry: the first line of each
        // kind is logged, the rest counted and summarized once a minute.
        const repeated = repeats.seen(`${entry.namespace} ${message}`);
        if (repeated === undefined) return;
        const fields = { kafka: entry.namespace, ...extra, ...(repeated ? { repeated } : {}) };
        // Warnings at most: what kafkajs reports as an error reaches our code as a failed call,
        // which is logged (or an outage reported) where it is handled.
        if (entry.level <= logLevel.WARN) log.warn(fields, message);
        else log.debug(fields, message);
      };
    },
  });
}

const REPEAT_WINDOW_MS = 60_000;

/** Which log lines to write: the first of a kind per window, then one carrying the count of the rest. */
class RepeatedLines {
  private readonly windows = new Map<string, { since: number; suppressed: number }>();

  /** undefined: suppress this line; 0: a first line; n: a line standing for n suppressed ones. */
  seen(kind: string, now = Date.now()): number | undefined {
    const window = this.windows.get(kind);
    if (!window || now - window.since >= REPEAT_WINDOW_MS) {
      if (this.windows.size > 1000) this.windows.clear();
      this.windows.set(kind, { since: now, suppressed: 0 });
      return window?.suppressed ?? 0;
    }
    window.suppressed++;
    return undefined;
  }
}

/** kafkajs' errors for a broker that cannot be reached, went away or did not answer in time. */
const OUTAGE_ERRORS = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSTimeout',
  'KafkaJSLockTimeout',
  'KafkaJSBrokerNotFound',
  'KafkaJSNoBrokerAvailableError',
  'KafkaProduceTimeout',
]);
/**
 * A failure of the broker connection itself (refused, lost, timed out, or retries of those
 * exhausted), as opposed to a broker's refusal of one request: the first is an outage of the log.
 */
export function isKafkaOutage(error: unknown): boolean {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 5; depth++) {
    const code = (cause as { code?: unknown }).code;
    if (OUTAGE_ERRORS.has(cause.name) || isSocketErrorCode(code)) {
      return true;
    }
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
