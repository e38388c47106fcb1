import { Kafka, type LogEntry, logLevel } from 'kafkajs';
import type { Logger } from '../log/index.js';
import { usePooledKafkaEncoderBuffers } from './pooled-encoder.js';
import { useOwnProduceEncoder } from './produce-encoder.js';

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
export function createKafka(
  settings: KafkaSettings,
  log?: Logger,
  retries: 'fail-fast' | 'patient' = 'fail-fast',
): Kafka {
  usePooledKafkaEncoderBuffers();
  useOwnProduceEncoder();
  return new Kafka({
    clientId: settings.clientId,
    brokers: settings.brokers,
    connectionTimeout: 1000,
    requestTimeout: retries === 'patient' ? 30_000 : 5000,
    retry:
      retries === 'patient'
        ? { initialRetryTime: 200, maxRetryTime: 5000, retries: 50 }
        : { initialRetryTime: 100, maxRetryTime: 1000, retries: 3 },
    logLevel: log ? logLevel.WARN : logLevel.NOTHING,
    logCreator: () => (entry: LogEntry) => {
      if (!log) return;
      const { message, timestamp: _timestamp, ...extra } = entry.log;
      const fields = { kafka: entry.namespace, ...extra };
      if (entry.level === logLevel.ERROR) log.error(fields, message);
      else if (entry.level === logLevel.WARN) log.warn(fields, message);
      else log.debug(fields, message);
    },
  });
}
