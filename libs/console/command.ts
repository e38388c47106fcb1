import type { z } from 'zod';
import type { ConsoleConfig } from '../config/index.js';
import type { Database } from '../db/index.js';

export interface ConsoleContext {
  config: ConsoleConfig;
  db: Database;
  /** Progress for long commands; goes to stderr so stdout stays one JSON document. */
  progress(message: string): void;
}

/**
 * A console command: `name` is the words typed (`org create`), `flags` validates the parsed
 * `--kebab-case` flags, and `run` returns what is printed as JSON.
 */
export interface Command<S extends z.ZodObject = z.ZodObject> {
  name: string;
  summary: string;
  usage: string;
  flags: S;
  /**
   * Body fields the domain validates under another name than the command's flag
   * (`start_date` -> `start`), so its refusals name the flag the operator typed. A field whose
   * kebab-case spelling is a flag needs no entry.
   */
  flagOfField?: Record<string, string>;
  /** Whether the command needs the schema migrated first (all but `migrate`). */
  needsSchema?: boolean;
  run(context: ConsoleContext, flags: z.output<S>): Promise<unknown>;
  /**
   * The exit code of a run that returned `result` (default 0): a command that finished but left
   * some of its work undone says so to cron and scripts, its JSON still on stdout.
   */
  exitCode?(result: unknown): number;
}

/** Exit code of a command that finished with some of its work failed (listed in its JSON). */
export const PARTIAL_FAILURE = 3;

export function defineCommand<S extends z.ZodObject>(command: Command<S>): Command<S> {
  return command;
}
