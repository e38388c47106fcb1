import { createHook } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { createKafka } from '../../libs/kafka/index.js';
import { testServices, uniqueName } from '../helpers/services.js';

/** Timers made in the process during `ms` (each setTimeout is one; a setInterval re-arms its own). */
async function timersMadeDuring(ms: number): Promise<number> {
  let made = 0;
  const hook = createHook({
    init(_id, type) {
      if (type === 'Timeout') made++;
    },
  }).enable();
  try {
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    hook.disable();
  }
  return made - 1; // the wait's own
}

describe('an idle Kafka client', () => {
  it('does not wake its process every millisecond once connected (kafkajs issue 1556)', async () => {
    const kafka = createKafka({ brokers: testServices().kafkaBrokers, clientId: uniqueName('idle') });
    const admin = kafka.admin();
    await admin.connect();
    try {
      // an answered request is what starts kafkajs 2.2.4's loop on that connection
      await admin.listTopics();
      // kafkajs as shipped: about one timer per connection and millisecond (hundreds here)
      expect(await timersMadeDuring(500)).toBeLessThan(25);
    } finally {
      await admin.disconnect();
    }
  });
});
