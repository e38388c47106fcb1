import { describe, expect, it } from 'vitest';
import { Database } from '../../libs/db/index.js';
import { createLogger } from '../../libs/log/index.js';
import { sleep, startDispatcher } from './support.js';

describe('dispatcher while Postgres is unreachable', () => {
  it('logs the outage when it starts, not on every poll', async () => {
    const lines: { level: number; msg: string }[] = [];
    const log = createLogger({
      level: 'info',
      service: 'dispatcher',
      destination: { write: (line: string) => lines.push(JSON.parse(line)) },
    });
    const unreachable = new Database('postgres://postgres@127.0.0.1:1/nowhere', { poolSize: 2 });
    const dispatcher = startDispatcher(unreachable, { pollMs: 50 }, log);
    try {
      await sleep(1500);
    } finally {
      await dispatcher.stop();
      await unreachable.close();
    }
    const messages = lines.map((line) => line.msg);
    expect(messages.filter((msg) => msg === 'dispatcher loop failed; retrying')).toHaveLength(1);
    expect(messages.filter((msg) => msg === 'dispatcher loop still failing; retrying')).toHaveLength(0);
    expect(messages.filter((msg) => msg.startsWith('cannot LISTEN'))).toHaveLength(1);
  });
});
