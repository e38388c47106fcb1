import { toErrorBody } from '../errors/index.js';
import type { UsageEventBatchResult } from '../schemas/index.js';
import type { BatchOutcome } from './core.js';

/** The batch route's body, the same on both front ends: per event, in request order. */
export function batchResultBody(outcomes: readonly BatchOutcome[], requestId: string): UsageEventBatchResult {
  return {
    data: outcomes.map((outcome) => {
      if ('event' in outcome) return { status: 201, data: outcome.event };
      const { status, body } = toErrorBody(outcome.error, requestId);
      return { status, error: body };
    }),
  };
}
