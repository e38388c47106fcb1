import { describe, expect, it } from 'vitest';
import { InFlightRequests } from './in-flight.js';

async function hasResolved(promise: Promise<void>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('InFlightRequests', () => {
  it('is idle at once when nothing runs', async () => {
    const requests = new InFlightRequests();
    expect(await hasResolved(requests.idle())).toBe(true);
    expect(requests.draining).toBe(false);
  });

  it('resolves every waiter when the last running request finishes, not before', async () => {
    const requests = new InFlightRequests();
    requests.begin();
    requests.begin();
    requests.startDraining();
    expect(requests.draining).toBe(true);
    const first = requests.idle();
    const second = requests.idle();
    requests.finish();
    expect(await hasResolved(first)).toBe(false);
    requests.finish();
    expect(await hasResolved(first)).toBe(true);
    expect(await hasResolved(second)).toBe(true);
    expect(requests.count).toBe(0);
  });

  it('is not idle while one request runs, and idle once it finishes', async () => {
    const requests = new InFlightRequests();
    requests.begin();
    const idle = requests.idle();
    expect(await hasResolved(idle)).toBe(false);
    expect(await hasResolved(requests.idle())).toBe(false);
    requests.finish();
    expect(await hasResolved(idle)).toBe(true);
  });

  it('drains from startDraining on, even with nothing running', () => {
    const requests = new InFlightRequests();
    requests.startDraining();
    expect(requests.draining).toBe(true);
    requests.begin();
    requests.finish();
    expect(requests.draining).toBe(true);
  });

  it('refuses a finish without a begin: a request counted twice would end the drain early', () => {
    const requests = new InFlightRequests();
    expect(() => requests.finish()).toThrow(/without a matching begin/);
  });
});
