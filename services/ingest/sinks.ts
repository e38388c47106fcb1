/**
 * The ingest service's second entry point (OpenMeter's sink worker): the consumer groups that copy
 * the usage topic into Postgres (`pg-sink`) and ClickHouse (`ch-sink`), committing offsets only
 * after each write, and `alerts`, which reads `usage_quantity` alerts near their threshold without
 * waiting for the pg-sink's watermark and hands the usage of watched items to the other policies
 * on counted usage (automatic top-ups, drafts, amount and credit alerts), which run after the
 * watermark, beside it (docs/decisions.md). Health, readiness
 * and metrics on SINKS_PORT. SIGTERM: stop fetching, write and commit the current batch, leave the
 * groups, exit within SHUTDOWN_TIMEOUT_MS.
 */
import {
  loadConfigOrExit,
  reaching,
  sinkSettings,
  startOrExit,
  stopOnSignals,
} from '../../libs/config/index.js';
import { openDatabase } from '../../libs/db/index.js';
import {
  alertPolicy,
  draftPolicy,
  QuantityAlerts,
  topUpPolicy,
  UsageGuardrails,
} from '../../libs/guardrails/index.js';
import { createKafka } from '../../libs/kafka/index.js';
import { createLogger } from '../../libs/log/index.js';
import { databaseCheck, startOpsServer } from '../../libs/observability/index.js';
import {
  KafkaSinkRunner,
  openUsageEventLog,
  openUsageReadStores,
  startUsageSinks,
  type UsageSink,
} from '../../libs/usage/index.js';

/**
 * The `alerts` group flushes this often: a crossing waits for it, then for the pg-sink to write
 * the event (its own SINK_FLUSH_MS), not for the watermark.
 */
const ALERTS_FLUSH_MS = 100;
/**
 * The guardrails load the items their policies watch (top-ups, drafts, amount and credit alerts)
 * this often: one that becomes watched is evaluated within it...
 */
const GUARDRAILS_RELOAD_MS = 2000;
/**
 * ...and every watched item this often: the `alerts` group commits a batch once its quantity
 * alerts are done, before the other policies ran over it (docs/decisions.md).
 */
const GUARDRAILS_SWEEP_MS = 30_000;

const config = loadConfigOrExit(sinkSettings);
const log = createLogger({ level: config.LOG_LEVEL, service: 'sinks' });
const { opened, sinks, ops, guardrails, alerts, alertsRunner, readStores, eventLog } = await startOrExit(
  'the sinks',
  async () => {
    const opened = await openDatabase(config, 'billing-sinks', log);
    if (config.DATABASE_URL) await reaching('DATABASE_URL', opened.db.query('SELECT 1'));
    // an event is on the log, or released, within the log's acknowledgement timeout and linger
    const settleMs = config.KAFKA_ACK_TIMEOUT_MS + config.KAFKA_LINGER_MS + 200;
    // policies on counted usage, in the `alerts` consumer group (docs/decisions.md)
    const guardrails = new UsageGuardrails({
      db: opened.db,
      log: log.child({ component: 'guardrails' }),
      policies: [
        topUpPolicy(opened.db),
        alertPolicy(opened.db, { metrics: 'others' }),
        draftPolicy(opened.db),
      ],
      // the items some policy watches, loaded this often: the usage of the others is skipped
      reloadMs: GUARDRAILS_RELOAD_MS,
      sweepMs: GUARDRAILS_SWEEP_MS,
    });
    const alerts = new QuantityAlerts({
      db: opened.db,
      log: log.child({ component: 'alerts' }),
      settleMs,
      // values of quantity alerts refreshed at most every 30 s: a read per alert, not per event
      refreshMs: 30_000,
    });
    const { eventLog } = await openUsageEventLog(config, opened.db, log);
    const readStores = openUsageReadStores(config, opened.db, eventLog, log);
    const sinks = await startUsageSinks({ config, db: opened.db, log });
    let alertsRunner: KafkaSinkRunner | undefined;
    if (config.SINKS_GUARDRAILS && config.KAFKA_BROKERS) {
      alertsRunner = new KafkaSinkRunner({
        kafka: createKafka(
          { brokers: config.KAFKA_BROKERS, clientId: `${config.KAFKA_CLIENT_ID}-alerts` },
          log,
          'patient',
        ),
        topic: config.KAFKA_USAGE_TOPIC,
        groupId: `${config.KAFKA_CONSUMER_GROUP_PREFIX}alerts`,
        sink: evaluatorSink(alerts.sink(), guardrails.sink('queued')),
        batchSize: config.SINK_BATCH_SIZE,
        flushMs: Math.min(config.SINK_FLUSH_MS, ALERTS_FLUSH_MS),
        log,
      });
      // only when its group runs: attached, each loads (and reads) what it watches on its own
      alerts.attach(readStores);
      guardrails.attach(readStores);
      // in the background: the stores' groups are what "running" means
      alertsRunner
        .start()
        .catch((error: unknown) => log.error({ err: error, sink: 'alerts' }, 'listener failed to start'));
    }
    const ops = await startOpsServer({
      host: config.HOST,
      port: config.SINKS_PORT,
      checks: () => [databaseCheck(opened.db), ...sinks.checks()],
    });
    return { opened, sinks, ops, guardrails, alerts, alertsRunner, readStores, eventLog };
  },
);
const groups = [...sinks.runners.map((runner) => runner.name), ...(alertsRunner ? ['alerts'] : [])];
log.info({ port: ops.port, sinks: groups }, 'sinks running');
process.stdout.write(`sinks running (${groups.join(', ')}); ops on port ${ops.port}\n`);

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log,
  deadlineMessage: 'shutdown deadline passed; exiting (uncommitted events are read again at restart)',
  async stop() {
    await sinks.stop();
    await alertsRunner?.stop();
    await guardrails.stop();
    await alerts.stop();
    await readStores.close();
    await eventLog.close();
    await ops.close();
    await opened.close();
  },
});

/**
 * The `alerts` group's sink: the quantity alerts, which a batch waits for (its offsets commit
 * after them), and the other policies, handed the batch and run in the background after the
 * watermark (they sweep every watched item at a process's first load and every
 * GUARDRAILS_SWEEP_MS: what a killed process handed them and never ran is run then). One consumer
 * for both: a group fetches the whole log, whatever it skips.
 */
function evaluatorSink(quantityAlerts: UsageSink, policies: UsageSink): UsageSink {
  return {
    name: quantityAlerts.name,
    assigned(wholeLog) {
      quantityAlerts.assigned?.(wholeLog);
      policies.assigned?.(wholeLog);
    },
    async write(events) {
      await policies.write(events);
      await quantityAlerts.write(events);
    },
    async writeVoids(voids) {
      await policies.writeVoids(voids);
      await quantityAlerts.writeVoids(voids);
    },
  };
}
