import type pg from 'pg';
import type { z } from 'zod';
import {
  ConfigError,
  type ConsoleConfig,
  consoleSettings,
  loadConfig,
  withTimeout,
} from '../config/index.js';
import { type Database, migrate, openDatabase } from '../db/index.js';
import { ApiError, type FieldError, fieldErrorsFromZod, ZOD_PARSE_OPTIONS } from '../errors/index.js';
import { parseArgv } from './argv.js';
import type { Command } from './command.js';
import { COMMANDS } from './commands/index.js';

export interface ConsoleIo {
  stdout(text: string): void;
  stderr(text: string): void;
}

/**
 * Runs one console command and returns the exit code: 0 with JSON on stdout, 1 with a message on
 * stderr when the command fails, 2 for a usage error (flags refused on their own, by the parser
 * here or by the domain's validation), PARTIAL_FAILURE with JSON on stdout when
 * the command finished but some of its work failed (a billing run with failures).
 */
export async function runConsole(
  argv: string[],
  io: ConsoleIo,
  env: NodeJS.ProcessEnv = process.env,
  commands: Command[] = COMMANDS,
): Promise<number> {
  const { words, flags, repeated } = parseArgv(argv);
  // `help`, `--help`, `help org`, `org --help`, `help org create` and `org create --help` ask for
  // help: it is the answer (stdout, exit 0). The parser reads `--help org` as a flag with a value:
  // that value is a word of the topic.
  const helpTopic =
    words[0] === 'help'
      ? words.slice(1)
      : flags.help === undefined
        ? undefined
        : flags.help === true
          ? words
          : [...words, flags.help];
  if (helpTopic) return printHelp(helpTopic, commands, io);
  const command = findCommand(commands, words);
  if (!command) {
    const group = commandsUnder(commands, words);
    io.stderr(
      `${words.length ? `unknown command: ${words.join(' ')}\n\n` : ''}${help(group.length ? group : commands)}`,
    );
    return 2;
  }
  const parsed = command.flags.safeParse(flags, ZOD_PARSE_OPTIONS);
  if (!parsed.success || repeated.length) {
    io.stderr(
      invalidFlags(command, [
        ...repeated.map((flag) => `--${flag}: Given twice; give it once.`),
        ...(parsed.success ? [] : fieldErrorsFromZod(parsed.error.issues)).map(
          (e) => `--${e.field}: ${flagMessage(e, flags)}`,
        ),
      ]),
    );
    return 2;
  }

  let config: ConsoleConfig;
  try {
    config = loadConfig(consoleSettings, env);
  } catch (error) {
    io.stderr(`${(error as Error).message}\n`);
    return 2;
  }
  const opened = await openDatabase(config, 'console').catch((error: Error) => error);
  if (opened instanceof Error) {
    io.stderr(`cannot open the database: ${opened.message}\n`);
    return 1;
  }
  if (opened.mode === 'postgres') {
    const unreachable = await firstAnswer(opened.db);
    if (unreachable) {
      // not awaited: a connection stuck in its handshake is never released (bin/console.ts exits)
      void opened.close().catch(() => {});
      io.stderr(
        `cannot connect to the database (DATABASE_URL ${whereIs(config.DATABASE_URL!)}): ${unreachable.message}\n`,
      );
      return 1;
    }
  }
  const watched = watchTransactionReads(opened.db);
  try {
    // A console that serves the embedded database itself (npm start is not running) brings the
    // schema up to date first; against Postgres, migrations are an explicit step.
    if (opened.mode === 'embedded-server' && command.needsSchema !== false) await migrate(opened.db);
    const result = await command.run(
      { config, db: watched.db, progress: (message) => io.stderr(`${message}\n`) },
      parsed.data,
    );
    io.stdout(`${JSON.stringify(result, null, 2)}\n`);
    return command.exitCode?.(result) ?? 0;
  } catch (error) {
    if (error instanceof ConfigError) {
      // a setting this command needs and the environment lacks: a usage error, like a bad flag
      io.stderr(`${error.message}\n`);
      return 2;
    }
    if (isInvalidInput(error, watched)) {
      // refused on the flags alone, like the parser's refusals above: worded the same way
      io.stderr(
        invalidFlags(command, error.details?.map((d) => `${flagOf(d.field, command)}: ${d.message}`) ?? []),
      );
      return 2;
    }
    io.stderr(`${describe(error, command)}\n`);
    return 1;
  } finally {
    await opened.close();
  }
}

/**
 * What the operator typed wrong, in the console's terms: a flag left out is required, one given
 * without a value needs one ("Invalid input" or "Must be a string." would not say so).
 */
function flagMessage(error: FieldError, flags: Record<string, string | true>): string {
  if (error.code === 'unknown_field' || error.field === '(body)') return error.message;
  const flag = error.field.split('.')[0]!;
  if (!Object.hasOwn(flags, flag)) return `Required: give --${flag} <value>.`;
  if (flags[flag] === true && error.field === flag) return `Needs a value: --${flag} <value>.`;
  return error.message;
}

interface WatchedDatabase {
  db: Database;
  /** Whether a transaction of the command has run a query yet. */
  read: boolean;
}

/**
 * The command's database, noting when one of its transactions first runs a query. A
 * VALIDATION_ERROR raised before that refused the flags themselves (an email without @, an amount
 * of 0): a usage error, exit 2. One raised after was decided against stored records (a payment
 * above the invoice's balance, items priced in another period): the command failed, exit 1, like
 * a conflict. Existence checks outside transactions (the organization) answer NOT_FOUND, never that.
 */
function watchTransactionReads(db: Database): WatchedDatabase {
  const watched: WatchedDatabase = { db, read: false };
  const query = (tx: pg.PoolClient) =>
    ((...args: Parameters<pg.PoolClient['query']>) => {
      watched.read = true;
      return tx.query(...args);
    }) as pg.PoolClient['query'];
  watched.db = Object.create(db, {
    transaction: {
      value: <T>(fn: (tx: pg.PoolClient) => Promise<T>, options?: Parameters<Database['transaction']>[1]) =>
        db.transaction((tx) => fn(Object.create(tx, { query: { value: query(tx) } })), options),
    },
  });
  return watched;
}

function isInvalidInput(error: unknown, watched: WatchedDatabase): error is ApiError {
  return error instanceof ApiError && error.code === 'VALIDATION_ERROR' && !watched.read;
}

function findCommand(commands: Command[], words: string[]): Command | undefined {
  const typed = words.join(' ');
  return commands.find((c) => c.name === typed);
}

/** The commands whose name begins with these words (`org` -> `org create`, `org set-plan`, ...). */
function commandsUnder(commands: Command[], words: string[]): Command[] {
  return words.length ? commands.filter((c) => c.name.startsWith(`${words.join(' ')} `)) : [];
}

function printHelp(topic: string[], commands: Command[], io: ConsoleIo): number {
  const command = findCommand(commands, topic);
  if (command) {
    io.stdout(commandHelp(command));
    return 0;
  }
  const group = commandsUnder(commands, topic);
  if (!topic.length || group.length) {
    io.stdout(help(topic.length ? group : commands));
    return 0;
  }
  io.stderr(`unknown command: ${topic.join(' ')}\n\n${help(commands)}`);
  return 2;
}

function invalidFlags(command: Command, problems: string[]): string {
  const lines = problems.map((problem) => `  ${problem}\n`).join('');
  return `invalid flags for '${command.name}':\n${lines}usage: ${command.name} ${command.usage}\n`;
}

/**
 * The flag behind a field the domain named (`contact_name` -> `--contact-name`,
 * `items.0.product_id` -> `--items.0.product_id`); a field no flag sets is left as it is.
 */
function flagOf(field: string, command: Command): string {
  const [first = '', ...rest] = field.split('.');
  const flag = command.flagOfField?.[first] ?? first.replaceAll('_', '-');
  return Object.hasOwn(command.flags.shape, flag) ? [`--${flag}`, ...rest].join('.') : field;
}

/** How long Postgres may take to answer the console's first query before it counts as unreachable. */
const DATABASE_ANSWER_TIMEOUT_MS = 10_000;

/**
 * pg connects on the first query: without asking first, an unreachable DATABASE_URL would surface
 * from inside the command as a bare `connect ECONNREFUSED`, and a port that accepts connections but
 * never answers would hang the console for good.
 */
async function firstAnswer(db: Database): Promise<Error | undefined> {
  return withTimeout(db.query('SELECT 1'), DATABASE_ANSWER_TIMEOUT_MS).then(
    () => undefined,
    (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
  );
}

/** host:port/database of a Postgres URL: where it points, without its credentials. */
function whereIs(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  return `${url.host}${url.pathname}`;
}

function describe(error: unknown, command: Command): string {
  if (error instanceof ApiError) {
    const details = error.details?.map((d) => `\n  ${flagOf(d.field, command)}: ${d.message}`).join('') ?? '';
    return `error (${error.code}): ${error.message}${details}`;
  }
  const pg = error as { code?: string; message?: string };
  if (pg?.code === '42P01') return 'error: the database schema is missing; run `console migrate` first';
  return `error: ${pg?.message ?? String(error)}`;
}

/** How the console is started from the project's directory (package.json `bin`). */
const INVOCATION = 'npx billing';

function help(commands: Command[]): string {
  const lines = commands.map((c) => `  ${c.name.padEnd(22)} ${c.summary}\n  ${' '.repeat(22)} ${c.usage}`);
  return (
    `usage: ${INVOCATION} <command> [--flags]   (or: npm run --silent console -- <command> [--flags])\n` +
    `       ${INVOCATION} <command> --help      (one command's flags)\n\ncommands:\n${lines.join('\n')}\n`
  );
}

/**
 * One command's help: its usage line, its summary, and each of its flags as its schema has it
 * (required, or the value it takes when left out), so the list cannot drift from what is parsed.
 */
function commandHelp(command: Command): string {
  const flags = Object.entries(command.flags.shape as Record<string, z.ZodType>);
  const width = Math.max(0, ...flags.map(([flag]) => flag.length)) + 4;
  const lines = flags.map(([flag, schema]) => {
    const omitted = schema.safeParse(undefined);
    const status = !omitted.success
      ? 'required'
      : omitted.data === undefined
        ? 'optional'
        : `default: ${omitted.data instanceof Date ? omitted.data.toISOString() : String(omitted.data)}`;
    const description = schema.description ? `; ${schema.description}` : '';
    return `  ${`--${flag}`.padEnd(width)} ${status}${description}\n`;
  });
  return (
    `usage: ${INVOCATION} ${command.name}${command.usage ? ` ${command.usage}` : ''}\n\n` +
    `${command.summary}\n${lines.length ? `\nflags:\n${lines.join('')}` : ''}`
  );
}
