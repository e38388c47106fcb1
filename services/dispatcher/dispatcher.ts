import type { DispatcherConfig } from '../../libs/config/index.js';
import type { Database } from '../../libs/db/index.js';
import type { Logger } from '../../libs/log/index.js';
import { WebhookDispatcher } from '../../libs/webhooks/index.js';

export type DispatcherOptions = Pick<
  DispatcherConfig,
  | 'DISPATCHER_POLL_MS'
  | 'DISPATCHER_CONCURRENCY'
  | 'DISPATCHER_ENDPOINT_CONCURRENCY'
  | 'WEBHOOK_TIMEOUT_MS'
  | 'WEBHOOK_MAX_ATTEMPTS'
  | 'WEBHOOK_RETRY_DELAYS_MS'
  | 'WEBHOOK_ALLOW_LOCALHOST'
>;

/** The dispatcher of this process, from its parsed settings; `npm start` and main.ts both use it. */
export function buildDispatcher(deps: {
  db: Database;
  log: Logger;
  config: DispatcherOptions;
}): WebhookDispatcher {
  const { config } = deps;
  return new WebhookDispatcher(deps.db, deps.log, {
    pollMs: config.DISPATCHER_POLL_MS,
    concurrency: config.DISPATCHER_CONCURRENCY,
    endpointConcurrency: config.DISPATCHER_ENDPOINT_CONCURRENCY,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxAttempts: config.WEBHOOK_MAX_ATTEMPTS,
    retryDelaysMs: config.WEBHOOK_RETRY_DELAYS_MS,
    allowLocalhost: config.WEBHOOK_ALLOW_LOCALHOST,
  });
}
