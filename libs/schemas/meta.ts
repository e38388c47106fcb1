import { z } from 'zod';
import { PLAN_LIMITS } from '../rate-limit/index.js';
import { dateTime } from './primitives.js';

/** The contract revision, a date (spec "Versioning"). */
export const API_VERSION = '2026-11-20';
export const BASE_PATH = '/api/public/v1';

export const Meta = z
  .object({
    name: z.string(),
    version: z.string().meta({ description: 'The API contract revision, a date.' }),
    base_path: z.string(),
    authentication: z.literal('bearer'),
    openapi_url: z.string(),
    mcp_url: z.string(),
    llms_url: z.string(),
    rate_limits: z.object({
      window: z.literal('hour'),
      window_alignment: z.literal('utc_hour'),
      default_plan: z.literal('beta'),
      plans: z.object({
        beta: z.literal(PLAN_LIMITS.beta),
        starter: z.literal(PLAN_LIMITS.starter),
        growth: z.literal(PLAN_LIMITS.growth),
        scale: z.literal(PLAN_LIMITS.scale),
      }),
    }),
    organization: z
      .object({
        plan: z.string(),
        limit: z.number().int(),
        remaining: z.number().int(),
        resets_at: dateTime,
      })
      .optional()
      .meta({ description: 'Present when a valid API key is sent.' }),
  })
  .meta({ id: 'ApiMetadata' });
export type Meta = z.output<typeof Meta>;
