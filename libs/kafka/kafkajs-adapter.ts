import { createRequire } from 'node:module';

/**
 * The one workaround this project carries for kafkajs (docs/decisions.md, "kafkajs' idle timer
 * loop"), written against the exact version package.json pins; kafkajs-adapter.test.ts fails
 * when the installed kafkajs is another, so an upgrade is a decision, not an accident.
 *
 * kafkajs 2.2.4's RequestQueue (one per broker connection) reschedules its pending-request check
 * after every check, whether or not a request is pending, at a negative delay (1 ms) when no
 * throttling is in effect: once a connection has had one answer, it wakes its process a thousand
 * times a second for as long as it stays connected (https://github.com/tulios/kafkajs/issues/1556;
 * the fix proposed upstream, https://github.com/tulios/kafkajs/pull/1667, is unreleased). A check
 * is only ever needed for a request that waits: one pushed while throttled or over the in-flight
 * limit schedules a check itself (push), and every answer checks the queue at once
 * (fulfillRequest). So with nothing pending nothing is scheduled; with requests pending, kafkajs'
 * own rule runs unchanged.
 */
export const KAFKAJS_VERSION = '2.2.4';

interface RequestQueuePrototype {
  scheduleCheckPendingRequests(this: { pending: unknown[] }): void;
}

const require = createRequire(import.meta.url);

function applyFix(): boolean {
  const installed = (require('kafkajs/package.json') as { version: string }).version;
  if (installed !== KAFKAJS_VERSION) return false;
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as {
    prototype: RequestQueuePrototype;
  };
  const original = RequestQueue.prototype.scheduleCheckPendingRequests;
  RequestQueue.prototype.scheduleCheckPendingRequests = function scheduleWhilePending() {
    if (this.pending.length === 0) return;
    original.call(this);
  };
  return true;
}

/** Whether the workaround is in place (false on any kafkajs other than KAFKAJS_VERSION). */
export const requestQueueIdleFixApplied = applyFix();
