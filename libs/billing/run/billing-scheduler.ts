import type { Database } from '../../db/index.js';
import type { Logger } from '../../log/index.js';
import { type OpenedUsageAggregator, openUsageAggregator } from '../../usage/index.js';
import { runBilling, usageSource } from './billing-run.js';

export interface BillingScheduler {
  /** Stops the timer and waits for a run in progress to finish. */
  stop(): Promise<void>;
}

/**
 * The billing run on a timer, for `npm start` (deployments schedule `console billing run` with
 * cron instead). It runs once shortly after start, then every `intervalSeconds`, one run at a
 * time. A failed run is logged as an error and the next one happens on schedule: the process
 * keeps serving, and nothing is swallowed.
 */
export function startBillingScheduler(options: {
  db: Database;
  config: Parameters<typeof openUsageAggregator>[0];
  intervalSeconds: number;
  log: Logger;
  firstRunDelayMs?: number;
}): BillingScheduler {
  const { db, log } = options;
  let usage: OpenedUsageAggregator | undefined;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const runOnce = async () => {
    usage ??= await openUsageAggregator(options.config, db);
    // Not before the usage accepted so far is in the totals (a run that cannot wait fails, and the
    // next one bills it).
    await usage.caughtUp({ onWaiting: (message) => log.info(message) });
    const summary = await runBilling(db, { usage: usageSource(usage.aggregator) });
    const { invoice_ids: _ids, ...counts } = summary;
    if (summary.failures.length)
      log.error({ billingRun: counts }, 'billing run could not bill some subscriptions');
    else log.info({ billingRun: counts }, 'billing run finished');
  };

  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        running = runOnce()
          .catch((error: unknown) => log.error({ err: error }, 'billing run failed'))
          .finally(() => {
            running = undefined;
            schedule(options.intervalSeconds * 1000);
          });
        // setTimeout holds at most 2^31 - 1 ms (~24.8 days); a longer interval would fire at once
      },
      Math.min(delayMs, 2 ** 31 - 1),
    );
    timer.unref();
  };
  schedule(options.firstRunDelayMs ?? 2000);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await usage?.close();
    },
  };
}
