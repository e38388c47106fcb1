import type { Database } from '../../db/index.js';
import type { Logger } from '../../log/index.js';
import { type OpenedUsageAggregator, openUsageAggregator, type UsageReadStores } from '../../usage/index.js';
import { expireCreditGrants } from '../credits/index.js';
import { postDueGraceDrafts, rerateDirtyDrafts, runBilling, usageSource } from '../run/index.js';
import { checkTopUps } from '../top-up/index.js';

export interface BillingScheduler {
  /** Stops the timers and waits for work in progress to finish. */
  stop(): Promise<void>;
}

/** How often credit grants are checked for expiry: a grant lapses within this of its expires_at. */
export const CREDIT_EXPIRY_SWEEP_MS = 10_000;

/**
 * The billing jobs on timers, for `npm start` (deployments schedule `console billing run` with
 * cron instead, which expires grants too). The billing run happens once shortly after start, then
 * every `intervalSeconds`; credit grants whose expiry has come lapse every few seconds; each job
 * checks the automatic top-ups of the customers it touched. One run of each at a time. A failed
 * job is logged as an error and the next one happens on schedule: the process keeps serving, and
 * nothing is swallowed.
 */
export function startBillingScheduler(options: {
  db: Database;
  config: Parameters<typeof openUsageAggregator>[0];
  /** The read-back's stores: top-up checks read credit balances through them. */
  stores: UsageReadStores;
  intervalSeconds: number;
  log: Logger;
  firstRunDelayMs?: number;
  expirySweepMs?: number;
  /**
   * What follows a move of what customers can spend or owe (a posting, an expiry): default, their
   * automatic top-ups are checked; the process may add more (alerts, libs/guardrails).
   */
  afterCustomersMoved?: (customers: { orgId: number; customerId: number }[]) => Promise<void>;
}): BillingScheduler {
  const { db, log, stores } = options;
  const moved =
    options.afterCustomersMoved ??
    ((customers: { orgId: number; customerId: number }[]) =>
      checkTopUps(db, stores, customers).then(() => {}));
  let usage: OpenedUsageAggregator | undefined;

  const billingRun = async () => {
    usage ??= await openUsageAggregator(options.config, db);
    // Not before the usage accepted so far is in the totals (a run that cannot wait fails, and the
    // next one bills it).
    await usage.caughtUp({ onWaiting: (message) => log.info(message) });
    const summary = await runBilling(db, {
      usage: usageSource(usage.aggregator),
      afterPosting: moved,
    });
    const { invoice_ids: _ids, ...counts } = summary;
    if (summary.failures.length)
      log.error({ billingRun: counts }, 'billing run could not bill some subscriptions');
    else log.info({ billingRun: counts }, 'billing run finished');
  };
  const expirySweep = async () => {
    const touched = await expireCreditGrants(db, new Date());
    if (touched.length) {
      log.info({ customers: touched.length }, 'credit grants expired');
      await moved(touched);
    }
  };

  // late events and voids re-rate drafts, and grace drafts post, within seconds (not only at runs)
  const drafts = async () => {
    const rerated = await rerateDirtyDrafts(db);
    const posted = await postDueGraceDrafts(db, { now: new Date() });
    if (rerated.length || posted.invoiceIds.length) {
      log.info({ rerated: rerated.length, posted: posted.invoiceIds.length }, 'drafts re-rated and posted');
    }
    if (posted.customers.length) await moved(posted.customers);
  };

  const jobs = [
    repeat('drafts', drafts, {
      firstDelayMs: options.expirySweepMs ?? CREDIT_EXPIRY_SWEEP_MS,
      everyMs: options.expirySweepMs ?? CREDIT_EXPIRY_SWEEP_MS,
      log,
    }),
    repeat('billing run', billingRun, {
      firstDelayMs: options.firstRunDelayMs ?? 2000,
      everyMs: options.intervalSeconds * 1000,
      log,
    }),
    repeat('credit expiry', expirySweep, {
      firstDelayMs: options.expirySweepMs ?? CREDIT_EXPIRY_SWEEP_MS,
      everyMs: options.expirySweepMs ?? CREDIT_EXPIRY_SWEEP_MS,
      log,
    }),
  ];
  return {
    async stop() {
      await Promise.all(jobs.map((job) => job.stop()));
      await usage?.close();
    },
  };
}

/** `work` after `firstDelayMs`, then `everyMs` after each run ends; errors are logged, never thrown. */
function repeat(
  name: string,
  work: () => Promise<void>,
  timing: { firstDelayMs: number; everyMs: number; log: Logger },
): { stop(): Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(
      () => {
        running = work()
          .catch((error: unknown) => timing.log.error({ err: error }, `${name} failed`))
          .finally(() => {
            running = undefined;
            schedule(timing.everyMs);
          });
        // setTimeout holds at most 2^31 - 1 ms (~24.8 days); a longer interval would fire at once
      },
      Math.min(delayMs, 2 ** 31 - 1),
    );
    timer.unref();
  };
  schedule(timing.firstDelayMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
