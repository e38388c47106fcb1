import { createRequire } from 'node:module';
import { afterEach, describe, expect, it } from 'vitest';
import { KAFKAJS_VERSION, requestQueueIdleFixApplied } from './kafkajs-adapter.js';

const require = createRequire(import.meta.url);

/** kafkajs' per-connection queue, driven here the way its Connection drives it. */
interface Queue {
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  push(request: { entry: object; expectResponse: boolean; sendRequest(): void }): void;
  fulfillRequest(answer: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
}
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (options: object) => Queue;
const silent = { debug() {}, info() {}, warn() {}, error() {} };

const queues: Queue[] = [];
function queue(maxInFlightRequests: number | null = null): Queue {
  const made = new RequestQueue({
    maxInFlightRequests,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: '127.0.0.1:9092',
    logger: silent,
  });
  queues.push(made);
  return made;
}
afterEach(() => {
  for (const made of queues.splice(0)) made.destroy();
});

/** A request as kafkajs' Connection pushes it; `sent` flips when the queue sends it. */
function request(correlationId: number) {
  const state = { sent: false, answered: false };
  const entry = {
    correlationId,
    apiName: 'Metadata',
    apiKey: 3,
    apiVersion: 6,
    resolve: () => {
      state.answered = true;
    },
    reject: () => {},
  };
  return {
    state,
    pushed: {
      entry,
      expectResponse: true,
      sendRequest: () => {
        state.sent = true;
      },
    },
  };
}

describe('the kafkajs idle timer loop workaround', () => {
  it('is in place on the kafkajs version it was written for (upgrading kafkajs means revisiting it)', () => {
    const installed = (require('kafkajs/package.json') as { version: string }).version;
    expect(
      installed,
      'kafkajs changed: check https://github.com/tulios/kafkajs/issues/1556 and the workaround in kafkajs-adapter.ts',
    ).toBe(KAFKAJS_VERSION);
    expect(requestQueueIdleFixApplied).toBe(true);
  });

  it('schedules no check after an answer when nothing waits', () => {
    const q = queue();
    const first = request(1);
    q.push(first.pushed);
    expect(first.state.sent).toBe(true);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(first.state.answered).toBe(true);
    // kafkajs 2.2.4 as shipped arms a 1 ms timer here, and again from it, forever
    expect(q.throttleCheckTimeoutId).toBeNull();
  });

  it('still sends a request that waited for a throttle to end, by a check it scheduled', async () => {
    const q = queue();
    q.maybeThrottle(30);
    const waiting = request(1);
    q.push(waiting.pushed);
    expect(waiting.state.sent).toBe(false);
    expect(q.throttleCheckTimeoutId).not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(waiting.state.sent).toBe(true);
    expect(q.pending).toHaveLength(0);
  });

  it('still sends a request that waited for the in-flight limit when the one ahead is answered', () => {
    const q = queue(1);
    const ahead = request(1);
    const behind = request(2);
    q.push(ahead.pushed);
    q.push(behind.pushed);
    expect([ahead.state.sent, behind.state.sent]).toEqual([true, false]);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(behind.state.sent).toBe(true);
  });
});
