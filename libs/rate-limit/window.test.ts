import { describe, expect, it } from 'vitest';
import { bucketKey, hourWindow } from './window.js';

describe('hour window', () => {
  it('is aligned to the top of the UTC hour', () => {
    const window = hourWindow(Date.UTC(2026, 0, 1, 23, 15, 0));
    expect(window.resetEpochSeconds).toBe(Date.UTC(2026, 0, 2, 0, 0, 0) / 1000);
    expect(window.secondsToReset).toBe(45 * 60);
  });

  it('never tells a client to retry after 0 seconds', () => {
    expect(hourWindow(Date.UTC(2026, 0, 1, 23, 59, 59, 900)).secondsToReset).toBe(1);
    expect(hourWindow(Date.UTC(2026, 0, 1, 0, 0, 0)).secondsToReset).toBe(3600);
  });

  it('rounds a part of a second up: Retry-After never ends before the window does', () => {
    expect(hourWindow(Date.UTC(2026, 0, 1, 23, 15, 0, 1)).secondsToReset).toBe(45 * 60);
    expect(hourWindow(Date.UTC(2026, 0, 1, 23, 59, 58, 500)).secondsToReset).toBe(2);
  });

  it('names one bucket per organization and hour', () => {
    const hour = hourWindow(Date.UTC(2026, 0, 1, 5)).hour;
    expect(bucketKey('p:', 42, hour)).toBe(`p:rl:42:${hour}`);
  });
});
