import { describe, expect, it } from 'vitest';
import { type AttemptedDelivery, judge, type PendingDelivery } from './delivery.js';
import type { AttemptOutcome } from './webhook-sender.js';

const specDelays = [1000, 2000, 4000, 8000];

/** An attempt of an event whose series was recovered at attempt 6 (README, POST .../recover). */
function attempted(attempt: number, outcome: AttemptOutcome): AttemptedDelivery {
  const pending = {
    kind: 'pending',
    eventId: '6f1c0c8e-4b1a-4c55-9d43-2f0b0f3b7e11',
    attempt,
    maxAttempts: 10,
    seriesFirstAttempt: 6,
  } as PendingDelivery;
  return {
    kind: 'attempted',
    pending,
    attemptedAt: new Date(0),
    keyIds: { service: 'k', standard: ['k'] },
    outcome,
  };
}

const failure: AttemptOutcome = { result: 'failure', responseCode: 500, responseBody: 'down', durationMs: 3 };

describe('judge', () => {
  it('spaces the retries of a recovered series from its own first attempt', () => {
    expect(judge(attempted(6, failure), specDelays)).toMatchObject({
      kind: 'failed',
      next: { status: 'RETRYING', delayMs: 1000 },
    });
    expect(judge(attempted(7, failure), specDelays)).toMatchObject({
      kind: 'failed',
      next: { status: 'RETRYING', delayMs: 2000 },
    });
    expect(judge(attempted(10, failure), specDelays)).toMatchObject({
      kind: 'failed',
      next: { status: 'FAILED' },
    });
  });

  it('judges by the result: only a success ends the event SUCCESS', () => {
    const success: AttemptOutcome = { result: 'success', responseCode: 204, responseBody: '', durationMs: 3 };
    expect(judge(attempted(7, success), specDelays)).toMatchObject({ kind: 'succeeded' });
    const timeout: AttemptOutcome = {
      result: 'timeout',
      responseCode: 408,
      responseBody: null,
      durationMs: 3,
    };
    expect(judge(attempted(7, timeout), specDelays)).toMatchObject({
      kind: 'failed',
      next: { status: 'RETRYING', delayMs: 2000 },
    });
  });
});
