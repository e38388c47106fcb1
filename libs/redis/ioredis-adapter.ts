import { createRequire } from 'node:module';
import { Command, type Redis } from 'ioredis';

/*
 * The one place that reaches past ioredis' public API; nothing else in the project does.
 *
 * What it replaces: ioredis writes a command as one string concatenated argument by argument
 * (`Command.toWritable`), which V8 must then walk and copy (flatten) and encode again at the
 * socket write. For the usage batch's reservation script (a key and a record per event: thousands
 * of arguments) that cost more CPU than the rest of ioredis' work. ioredis has no public way to
 * send bytes already encoded: a Buffer argument is still copied piece by piece (its maintainers
 * closed the report of that cost as wontfix: https://github.com/redis/ioredis/issues/982, about
 * pipelines of Buffers, the same encoding path). So a command whose request is encoded by us
 * (resp.ts) is sent as a `Command` whose `toWritable` returns those bytes: the subclass pattern
 * ioredis' own `Script` (defineCommand) uses, but not a documented API.
 *
 * What it relies on, in ioredis 5.11.1 (pinned exactly in package.json): `Command`'s constructor
 * `(name, args, { replyEncoding })`, and `Redis#sendCommand` writing `command.toWritable(stream)`
 * to the socket. ioredis-adapter.test.ts fails loudly as soon as either changes, and
 * `sendEncodedCommand` throws on another version.
 */

export const IOREDIS_VERSION = '5.11.1';

class EncodedCommand extends Command {
  constructor(
    name: string,
    private readonly bytes: Buffer,
  ) {
    super(name, [], { replyEncoding: 'utf8' });
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

let checkedVersion = false;

function checkVersion(): void {
  if (checkedVersion) return;
  const { version } = createRequire(import.meta.url)('ioredis/package.json') as { version: string };
  if (version !== IOREDIS_VERSION) {
    throw new Error(
      `ioredis ${version} is installed; libs/redis/ioredis-adapter.ts was written for ${IOREDIS_VERSION}. ` +
        'Check its internals (ioredis-adapter.test.ts), then move the pin.',
    );
  }
  checkedVersion = true;
}

/** Sends `bytes`, a whole RESP request for the command `name`, and resolves with its reply (UTF-8). */
export function sendEncodedCommand(redis: Redis, name: string, bytes: Buffer): Promise<unknown> {
  checkVersion();
  return redis.sendCommand(new EncodedCommand(name, bytes)) as Promise<unknown>;
}
