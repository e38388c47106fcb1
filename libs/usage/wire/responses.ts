import { toErrorBody } from '../../errors/index.js';
import {
  dataListWriter,
  jsonWriter,
  single,
  UsageEvent,
  UsageEventBatchResult,
} from '../../schemas/index.js';
import type { BatchOutcome } from '../domain/ingest.js';

/** The response bodies, written from the routes' own schemas (fast-json-stringify). */
const writeEvent = jsonWriter(single(UsageEvent));
const writeBatchResult = dataListWriter(UsageEventBatchResult);

/** The single-event route's 201 body, the same on both front ends. */
export function eventResponseBody(event: UsageEvent): string {
  return writeEvent({ data: event });
}

/**
 * The batch route's 200 body, the same on both front ends: per event, in request order, written
 * item by item into one buffer (dataListWriter).
 */
export function batchResponseBody(outcomes: readonly BatchOutcome[], requestId: string): Buffer {
  return writeBatchResult(batchResult(outcomes, requestId));
}

function batchResult(outcomes: readonly BatchOutcome[], requestId: string): UsageEventBatchResult {
  return {
    data: outcomes.map((outcome) => {
      if ('event' in outcome) return { status: 201, data: outcome.event };
      const { status, body } = toErrorBody(outcome.error, requestId);
      return { status, error: body };
    }),
  };
}
