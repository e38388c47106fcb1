import { KafkaJSError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { isKafkaOutage } from './client.js';

/** kafkajs' error classes by name, as it builds them (the package exports only some of them). */
function kafkajsError(name: string, message = name): Error {
  return Object.assign(new KafkaJSError(message), { name });
}

describe('isKafkaOutage', () => {
  it('is true for a broker that cannot be reached, went away or did not answer in time', () => {
    for (const name of [
      'KafkaJSConnectionError',
      'KafkaJSConnectionClosedError',
      'KafkaJSRequestTimeoutError',
      'KafkaJSTimeout',
      'KafkaJSLockTimeout',
      'KafkaJSBrokerNotFound',
      'KafkaJSNoBrokerAvailableError',
    ]) {
      expect(isKafkaOutage(kafkajsError(name)), name).toBe(true);
    }
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'ECONNREFUSED' });
    expect(isKafkaOutage(refused)).toBe(true);
  });

  it('looks through the retries kafkajs gave up on to their cause', () => {
    const exhausted = new KafkaJSNumberOfRetriesExceeded(kafkajsError('KafkaJSConnectionError'), {
      retryCount: 3,
      retryTime: 1000,
    });
    expect(isKafkaOutage(exhausted)).toBe(true);
  });

  it("is false for a broker's refusal of one request, which retrying the same request will not change", () => {
    const refusal = new KafkaJSProtocolError({
      message: 'The request included a message larger than the max message size the server will accept',
      type: 'MESSAGE_TOO_LARGE',
      code: 10,
      retriable: false,
    } as never);
    expect(isKafkaOutage(refusal)).toBe(false);
    expect(isKafkaOutage(new Error('something else'))).toBe(false);
    expect(isKafkaOutage('not an error')).toBe(false);
  });
});
