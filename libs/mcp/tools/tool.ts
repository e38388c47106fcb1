import { z } from 'zod';
import type { Queryable } from '../../db/index.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../../schemas/index.js';
import type { UsageReadStores } from '../../usage/index.js';

/** What a tool may use: a client inside a READ ONLY transaction, scoped to one organization. */
export interface ToolContext {
  db: Queryable;
  orgId: number;
  /** Today in UTC (YYYY-MM-DD): the reference date for "overdue". */
  today: string;
  /** The usage read-back's stores; absent where the server was built without them. */
  usage?: UsageReadStores | undefined;
}

/**
 * One MCP tool: its zod input schema is the single source of its validation and of the JSON
 * Schema published in tools/list. `run` returns plain data; the server serializes it.
 */
export interface McpTool<Input extends z.ZodType = z.ZodType> {
  name: string;
  title: string;
  description: string;
  input: Input;
  // method syntax on purpose (bivariant): a tool with a specific input schema is still an McpTool
  run(input: z.output<Input>, context: ToolContext): Promise<unknown>;
}

export function defineTool<Input extends z.ZodType>(tool: McpTool<Input>): McpTool<Input> {
  return tool;
}

/** `limit` as the spec fixes it for every tool: 1-100, default 25. */
export const toolLimit = z
  .number()
  .int()
  .min(1)
  .max(MAX_LIMIT)
  .default(DEFAULT_LIMIT)
  .describe(`How many rows to return, 1-${MAX_LIMIT} (default ${DEFAULT_LIMIT}), newest first.`);
