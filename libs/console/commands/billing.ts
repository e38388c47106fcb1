import { z } from 'zod';
import { runBilling, usageSource } from '../../billing/index.js';
import { afterCreditsMoved } from '../../guardrails/index.js';
import { getOrganization } from '../../organizations/index.js';
import { openUsageAggregator } from '../../usage/index.js';
import { defineCommand, PARTIAL_FAILURE } from '../command.js';
import { billingNowFlag, booleanFlag, idFlag, integerFlag } from '../flags.js';
import { withReadStores } from '../read-stores.js';

export const billingCommands = [
  defineCommand({
    name: 'billing run',
    summary:
      "Invoice every subscription due as of --now (all organizations, or one) and post the invoices (kept DRAFT for the organization's grace hours); re-rates drafts that late usage or voids touched, posts grace drafts whose grace has passed",
    usage: '[--now ISO] [--org ID] [--draft] [--batch-size N]',
    flags: z.strictObject({
      now: billingNowFlag.optional(),
      org: idFlag.optional(),
      /** Leave the invoices DRAFT, for review and `invoice post`. */
      draft: booleanFlag,
      'batch-size': integerFlag(1, 5000).optional(),
    }),
    run: async (context, f) => {
      const { db, config, progress } = context;
      if (f.org !== undefined) await getOrganization(db, f.org);
      const usage = await openUsageAggregator(config, db);
      try {
        // Every event accepted so far must be in the totals before a period is invoiced.
        await usage.caughtUp({ onWaiting: progress });
        const summary = await runBilling(db, {
          usage: usageSource(usage.aggregator),
          // what the posted customers' credits project moved: their automatic top-ups are checked
          afterPosting: (customers) =>
            withReadStores(context, (stores) => afterCreditsMoved(db, stores, customers)),
          now: f.now,
          orgId: f.org,
          post: !f.draft,
          batchSize: f['batch-size'],
          progress,
        });
        if (summary.failures.length) {
          progress(
            `billing run: ${summary.failures.length} subscription(s) could not be billed; see "failures"`,
          );
        }
        return summary;
      } finally {
        await usage.close();
      }
    },
    exitCode: (summary) => ((summary as { failures: unknown[] }).failures.length ? PARTIAL_FAILURE : 0),
  }),
];
