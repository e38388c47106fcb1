import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, type Logger, lazyChildLogger } from './index.js';

function capturing(level: string): {
  log: Logger;
  lines: () => Record<string, unknown>[];
  children: () => number;
} {
  const written: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      written.push(String(chunk));
      done();
    },
  });
  const log = createLogger({ level, service: 'test', destination });
  let children = 0;
  const child = log.child;
  // on the prototype chain of every child: counts them all, each made from its own parent
  log.child = function (this: Logger, ...args: Parameters<Logger['child']>) {
    children++;
    return child.apply(this, args);
  } as Logger['child'];
  return {
    log,
    lines: () => written.flatMap((text) => text.trim().split('\n')).map((line) => JSON.parse(line)),
    children: () => children,
  };
}

describe('lazyChildLogger', () => {
  it('logs what the child would, its bindings included and credentials redacted', () => {
    const { log, lines } = capturing('info');
    lazyChildLogger(log, { reqId: 'req_1' }).info({ authorization: 'Bearer sk_x', n: 1 }, 'request');
    log.child({ reqId: 'req_1' }).info({ authorization: 'Bearer sk_x', n: 1 }, 'request');
    const [lazy, eager] = lines();
    expect(lazy).toMatchObject({ reqId: 'req_1', n: 1, authorization: '[redacted]', msg: 'request' });
    expect({ ...lazy, time: undefined }).toEqual({ ...eager, time: undefined });
  });

  it('makes no child for a level its parent leaves off, and logs the levels it keeps', () => {
    const { log, lines, children } = capturing('warn');
    const lazy = lazyChildLogger(log, { reqId: 'req_2' });
    lazy.info('not written');
    lazy.debug('not written');
    expect(children()).toBe(0);
    expect(lazy.level).toBe('warn');
    lazy.warn('written');
    expect(children()).toBe(1);
    lazy.error('written too');
    expect(children()).toBe(1);
    expect(lines().map((line) => [line.msg, line.reqId])).toEqual([
      ['written', 'req_2'],
      ['written too', 'req_2'],
    ]);
  });

  it("keeps a level of its own (a route's logLevel) over its parent's", () => {
    const { log, lines } = capturing('info');
    const lazy = lazyChildLogger(log, { reqId: 'req_3' }, { level: 'debug' });
    expect(lazy.level).toBe('debug');
    lazy.debug('below the parent');
    expect(lines().map((line) => line.msg)).toEqual(['below the parent']);
  });

  it('takes a level set on it for itself, leaving its parent as it was', () => {
    const { log, lines } = capturing('info');
    const lazy = lazyChildLogger(log, { reqId: 'req_5' });
    lazy.level = 'debug';
    expect(lazy.level).toBe('debug');
    expect(log.level).toBe('info');
    lazy.debug('below the parent');
    log.debug('not written');
    expect(lines().map((line) => line.msg)).toEqual(['below the parent']);
  });

  it('logs at every level, fatal and trace included, each under its name', () => {
    const { log, lines } = capturing('trace');
    const lazy = lazyChildLogger(log, { reqId: 'req_6' });
    const levels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'] as const;
    for (const level of levels) lazy[level](level);
    expect(lines().map((line) => [line.level, line.msg])).toEqual(levels.map((level) => [level, level]));
  });

  it('gives its own children both sets of bindings', () => {
    const { log, lines } = capturing('info');
    lazyChildLogger(log, { reqId: 'req_4' }).child({ job: 'j' }).info('nested');
    expect(lines()[0]).toMatchObject({ reqId: 'req_4', job: 'j', msg: 'nested' });
  });
});
