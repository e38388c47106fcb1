import { describe, expect, it } from 'vitest';
import { afterFailedAttempt } from './retry-schedule.js';

const specDelays = [1000, 2000, 4000, 8000];
const failed = (number: number, maxAttempts: number, seriesFirstAttempt = 1) => ({
  number,
  maxAttempts,
  seriesFirstAttempt,
});

describe('afterFailedAttempt', () => {
  it('waits 1, 2, 4 and 8 s after attempts 1 to 4, then gives up after the 5th', () => {
    expect(afterFailedAttempt(failed(1, 5), specDelays)).toEqual({ status: 'RETRYING', delayMs: 1000 });
    expect(afterFailedAttempt(failed(2, 5), specDelays)).toEqual({ status: 'RETRYING', delayMs: 2000 });
    expect(afterFailedAttempt(failed(3, 5), specDelays)).toEqual({ status: 'RETRYING', delayMs: 4000 });
    expect(afterFailedAttempt(failed(4, 5), specDelays)).toEqual({ status: 'RETRYING', delayMs: 8000 });
    expect(afterFailedAttempt(failed(5, 5), specDelays)).toEqual({ status: 'FAILED' });
  });

  it("follows the event's own limit (a manual retry of a FAILED event allows one more)", () => {
    expect(afterFailedAttempt(failed(6, 6), specDelays)).toEqual({ status: 'FAILED' });
    expect(afterFailedAttempt(failed(1, 1), specDelays)).toEqual({ status: 'FAILED' });
    expect(afterFailedAttempt(failed(5, 6), specDelays)).toEqual({ status: 'RETRYING', delayMs: 8000 });
  });

  it('repeats the last delay when there are more attempts than delays', () => {
    expect(afterFailedAttempt(failed(1, 8), [10, 20])).toEqual({ status: 'RETRYING', delayMs: 10 });
    expect(afterFailedAttempt(failed(2, 8), [10, 20])).toEqual({ status: 'RETRYING', delayMs: 20 });
    expect(afterFailedAttempt(failed(6, 8), [10, 20])).toEqual({ status: 'RETRYING', delayMs: 20 });
  });

  it('starts the delays over in a recovered series', () => {
    expect(afterFailedAttempt(failed(6, 10, 6), specDelays)).toEqual({ status: 'RETRYING', delayMs: 1000 });
    expect(afterFailedAttempt(failed(7, 10, 6), specDelays)).toEqual({ status: 'RETRYING', delayMs: 2000 });
    expect(afterFailedAttempt(failed(9, 10, 6), specDelays)).toEqual({ status: 'RETRYING', delayMs: 8000 });
    expect(afterFailedAttempt(failed(10, 10, 6), specDelays)).toEqual({ status: 'FAILED' });
  });

  it('retries at once when no delays are configured', () => {
    expect(afterFailedAttempt(failed(1, 5), [])).toEqual({ status: 'RETRYING', delayMs: 0 });
    expect(afterFailedAttempt(failed(4, 5), [])).toEqual({ status: 'RETRYING', delayMs: 0 });
  });

  it('counts an attempt before its series start as the first of the series, never past the delays', () => {
    // below the series' first attempt, the delay index is clamped to the first delay, not read as none
    expect(afterFailedAttempt(failed(3, 10, 5), specDelays)).toEqual({ status: 'RETRYING', delayMs: 1000 });
    expect(afterFailedAttempt(failed(4, 10, 5), specDelays)).toEqual({ status: 'RETRYING', delayMs: 1000 });
  });
});
