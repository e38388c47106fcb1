import { Writable } from 'node:stream';
import { KafkaJSError, KafkaJSNumberOfRetriesExceeded, KafkaJSProtocolError } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../log/index.js';
import { createKafka, isKafkaOutage } from './client.js';
import { KafkaProduceTimeout } from './direct-producer.js';

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
    expect(isKafkaOutage(new KafkaProduceTimeout('no answer in time'))).toBe(true);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'ECONNREFUSED' });
    expect(isKafkaOutage(refused)).toBe(true);
    for (const code of [
      'ECONNRESET',
      'EPIPE',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
    ]) {
      expect(isKafkaOutage(Object.assign(new Error(code), { code })), code).toBe(true);
    }
    for (const code of ['ECONNREFUSED_LATER', 'XECONNRESET', 'ERR_INVALID_ARG_TYPE', 10]) {
      expect(isKafkaOutage(Object.assign(new Error('not a socket'), { code })), String(code)).toBe(false);
    }
  });

  it('looks through four causes for an outage, not five', () => {
    const wrapped = (depth: number) => {
      let error: Error = kafkajsError('KafkaJSConnectionError');
      for (let i = 0; i < depth; i++) error = new Error(`wrapper ${i}`, { cause: error });
      return error;
    };
    expect(isKafkaOutage(wrapped(4))).toBe(true);
    expect(isKafkaOutage(wrapped(5))).toBe(false);
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
    // a cause chain that loops ends the search
    const looped: Error & { cause?: unknown } = new Error('looped');
    looped.cause = looped;
    expect(isKafkaOutage(looped)).toBe(false);
  });
});

describe("kafkajs' log lines", () => {
  afterEach(() => vi.useRealTimers());

  /** A kafkajs client (it connects to nothing until asked) whose log lines land in `lines`. */
  function kafkaLogging() {
    const lines: Record<string, unknown>[] = [];
    const destination = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).trim().split('\n')) lines.push(JSON.parse(line));
        done();
      },
    });
    const log = createLogger({ level: 'debug', service: 'test', destination });
    const kafka = createKafka({ brokers: ['127.0.0.1:1'], clientId: 'test' }, log);
    return { logger: kafka.logger().namespace('Connection'), lines, kafka };
  }

  it('go to our log as warnings, errors included', () => {
    const { logger, lines } = kafkaLogging();
    logger.error('Connection error', { broker: '127.0.0.1:1' });
    logger.warn('Response timed out');
    logger.info('Connected');
    expect(lines.map(({ level, msg, kafka }) => [level, msg, kafka])).toEqual([
      ['warn', 'Connection error', 'Connection'],
      ['warn', 'Response timed out', 'Connection'],
    ]);
    expect(lines[0]).toMatchObject({ broker: '127.0.0.1:1' });
    // kafkajs' own timestamp is left out: the line has ours
    expect(lines[0]).not.toHaveProperty('timestamp');
  });

  it('write the first line of a kind, then after a minute one line counting the ones left out', () => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
    const { logger, lines } = kafkaLogging();
    logger.error('Connection error');
    logger.error('Connection error');
    logger.warn('Response timed out');
    vi.advanceTimersByTime(59_999);
    logger.error('Connection error');
    expect(lines.map((line) => [line.msg, line.repeated])).toEqual([
      ['Connection error', undefined],
      ['Response timed out', undefined],
    ]);
    vi.advanceTimersByTime(1);
    logger.error('Connection error');
    logger.error('Connection error');
    expect(lines.map((line) => [line.msg, line.repeated])).toEqual([
      ['Connection error', undefined],
      ['Response timed out', undefined],
      ['Connection error', 2],
    ]);
  });

  it('tells the same line of two namespaces apart', () => {
    const { logger, lines, kafka } = kafkaLogging();
    logger.error('Connection error');
    kafka.logger().namespace('Producer').error('Connection error');
    expect(lines.map(({ msg, kafka }) => [kafka, msg])).toEqual([
      ['Connection', 'Connection error'],
      ['Producer', 'Connection error'],
    ]);
  });

  it('remembers 1,001 kinds of line within a minute, and starts over at the next', () => {
    vi.useFakeTimers({ now: 1_700_000_000_000 });
    const { logger, lines } = kafkaLogging();
    for (let kind = 0; kind < 1001; kind++) logger.warn(`line ${kind}`);
    logger.warn('line 0');
    expect(lines).toHaveLength(1001);
    logger.warn('line 1001'); // the memory starts over
    logger.warn('line 0');
    expect(lines.slice(1001).map((line) => line.msg)).toEqual(['line 1001', 'line 0']);
  });
});
