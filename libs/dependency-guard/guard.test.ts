import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Logger } from '../log/index.js';
import { DependencyGuard, type DependencyGuardOptions, DependencyUnavailableError } from './guard.js';

/** A logger that keeps its lines: the guard's whole output is what these tests read. */
function recordingLog() {
  const lines: { level: string; msg: string; fields: Record<string, unknown> }[] = [];
  const at =
    (level: string) =>
    (fields: Record<string, unknown>, msg: string): void => {
      lines.push({ level, msg, fields });
    };
  return { lines, log: { error: at('error'), warn: at('warn'), info: at('info') } as unknown as Logger };
}

/** A call that ends when the test says so. */
function pending<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const outcomeOf = async <T>(promise: Promise<T>) => {
  let state: { value: T } | { error: unknown } | undefined;
  promise.then(
    (value) => {
      state = { value };
    },
    (error: unknown) => {
      state = { error };
    },
  );
  await vi.advanceTimersByTimeAsync(0);
  return () => state;
};

describe('DependencyGuard', () => {
  let probeAnswers: boolean;
  let probes: number;
  let recorded: ReturnType<typeof recordingLog>;
  const guards: DependencyGuard[] = [];

  const guard = (options: Partial<DependencyGuardOptions> = {}) => {
    const created = new DependencyGuard({
      name: 'kafka',
      label: 'The usage log',
      waitMs: 1000,
      whenSlow: 'fail',
      probe: async () => {
        probes++;
        if (!probeAnswers) await new Promise(() => {});
      },
      probeIntervalMs: 200,
      summaryIntervalMs: 60_000,
      log: recorded.log,
      ...options,
    });
    guards.push(created);
    return created;
  };

  beforeEach(() => {
    vi.useFakeTimers({
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance'],
    });
    probeAnswers = true;
    probes = 0;
    recorded = recordingLog();
  });
  afterEach(() => {
    for (const created of guards.splice(0)) created.close();
    vi.useRealTimers();
  });

  it('passes answers and failures of a dependency that answers in time, logging nothing', async () => {
    const g = guard();
    await expect(g.run(async () => 42)).resolves.toBe(42);
    await expect(g.run(async () => Promise.reject(new Error('refused by the broker')))).rejects.toThrow(
      'refused by the broker',
    );
    expect(g.available).toBe(true);
    expect(recorded.lines).toEqual([]);
  });

  it('gives every waiting call up once one waits past the bound, refuses at once while down, and recovers on the probe', async () => {
    probeAnswers = false;
    const g = guard();
    const stuck = pending<string>();
    const first = await outcomeOf(g.run(() => stuck.promise));
    await vi.advanceTimersByTimeAsync(600);
    const abandoned = vi.fn();
    const second = await outcomeOf(g.run(() => stuck.promise, abandoned));
    await vi.advanceTimersByTimeAsync(300);
    expect(first()).toBeUndefined();
    await vi.advanceTimersByTimeAsync(300); // the first call passes 1000 ms: both are given up on
    expect((first() as { error: unknown }).error).toBeInstanceOf(DependencyUnavailableError);
    expect((second() as { error: Error }).error.message).toBe(
      'kafka is unavailable (no answer within 1000 ms)',
    );
    expect(abandoned).toHaveBeenCalledOnce();
    expect(g.available).toBe(false);

    const call = vi.fn(async () => 'never called');
    for (let i = 0; i < 5; i++) await expect(g.run(call)).rejects.toBeInstanceOf(DependencyUnavailableError);
    expect(call).not.toHaveBeenCalled();

    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(2500); // the next probe answers
    expect(g.available).toBe(true);
    await expect(g.run(async () => 'back')).resolves.toBe('back');
    // a late answer of a call given up on changes nothing
    stuck.resolve('late');
    expect(recorded.lines.map((line) => [line.level, line.msg])).toEqual([
      ['error', 'kafka unavailable'],
      ['info', 'kafka available again'],
    ]);
    expect(recorded.lines[1]!.fields).toMatchObject({ dependency: 'kafka', refused: 5 });
  });

  it('watches the oldest call still waiting, whichever calls answered before it', async () => {
    probeAnswers = false;
    const g = guard();
    const calls = ['oldest', 'middle', 'slow', 'newest'].map(() => pending<string>());
    const outcomes = [];
    for (const [i, call] of calls.entries()) {
      if (i) await vi.advanceTimersByTimeAsync(200);
      outcomes.push(await outcomeOf(g.run(() => call.promise)));
    }
    // the calls started at 0, 200, 400 and 600 ms; the middle one answers, then the oldest
    calls[1]!.resolve('middle');
    calls[0]!.resolve('oldest');
    await vi.advanceTimersByTimeAsync(700); // 1300 ms: past the oldest's bound, not the slow one's
    expect(g.available).toBe(true);
    expect(outcomes.map((outcome) => outcome())).toEqual([
      { value: 'oldest' },
      { value: 'middle' },
      undefined,
      undefined,
    ]);
    await vi.advanceTimersByTimeAsync(400); // 1700 ms: the slow call waited past 1000 ms
    expect(g.available).toBe(false);
    for (const outcome of outcomes.slice(2)) {
      expect((outcome() as { error: unknown }).error).toBeInstanceOf(DependencyUnavailableError);
    }
  });

  it('forgets every call that answered, in whatever order: none is found slow afterwards', async () => {
    probeAnswers = false;
    const g = guard();
    const calls = [pending<string>(), pending<string>(), pending<string>()];
    for (const call of calls) await outcomeOf(g.run(() => call.promise));
    // the middle one first, then the newest, then the oldest: each leaves the list whole
    for (const i of [1, 2, 0]) calls[i]!.resolve('done');
    await vi.advanceTimersByTimeAsync(3000);
    expect(g.available).toBe(true);
    expect(recorded.lines).toEqual([]);
  });

  it('still watches a waiting call after the newest one answered and another started', async () => {
    probeAnswers = false;
    const g = guard();
    const stuck = pending<string>();
    const stuckOutcome = await outcomeOf(g.run(() => stuck.promise));
    await vi.advanceTimersByTimeAsync(100);
    await expect(g.run(async () => 'quick')).resolves.toBe('quick');
    await vi.advanceTimersByTimeAsync(100);
    const later = pending<string>();
    await outcomeOf(g.run(() => later.promise));
    await vi.advanceTimersByTimeAsync(900); // 1100 ms: the stuck call waited past 1000 ms
    expect((stuckOutcome() as { error: unknown }).error).toBeInstanceOf(DependencyUnavailableError);
    expect(g.available).toBe(false);
  });

  it('watches a call that starts after every earlier call answered', async () => {
    probeAnswers = false;
    const g = guard();
    // the list of waiting calls is empty again: the next call must still join it as its first
    await expect(g.run(async () => 'quick')).resolves.toBe('quick');
    await vi.advanceTimersByTimeAsync(100);
    const stuck = await outcomeOf(g.run(() => new Promise<string>(() => {})));
    await vi.advanceTimersByTimeAsync(1200); // past 1000 ms at the watchdog's tick at 1250 ms
    expect((stuck() as { error: unknown }).error).toBeInstanceOf(DependencyUnavailableError);
    expect(g.available).toBe(false);
  });

  it('watches every waiting call with one timer, and leaves no timer once closed', async () => {
    const g = guard();
    const calls = [pending<string>(), pending<string>(), pending<string>()];
    for (const call of calls) await outcomeOf(g.run(() => call.promise));
    expect(vi.getTimerCount()).toBe(1);
    g.close();
    expect(vi.getTimerCount()).toBe(0);
    for (const call of calls) call.resolve('done');
  });

  it('once closed, logs and summarizes no outage a late call finds', async () => {
    probeAnswers = false;
    const g = guard({ isOutage: (error) => (error as Error).message === 'connection refused' });
    g.close();
    // a request still running at shutdown fails as the dependency goes: nothing is left ticking
    await g.run(async () => Promise.reject(new Error('connection refused'))).catch(() => {});
    expect(vi.getTimerCount()).toBe(0);
    expect(recorded.lines).toEqual([]);
  });

  it('summarizes a lasting outage once per interval, without a line per refused call', async () => {
    probeAnswers = false;
    const g = guard({ summaryIntervalMs: 10_000 });
    await outcomeOf(g.run(() => new Promise(() => {})));
    await vi.advanceTimersByTimeAsync(1500);
    for (let i = 0; i < 100; i++) await g.run(async () => 0).catch(() => {});
    await vi.advanceTimersByTimeAsync(25_000);
    const summaries = recorded.lines.filter((line) => line.msg === 'kafka still unavailable');
    expect(summaries).toHaveLength(2);
    expect(summaries[0]!.fields).toMatchObject({ refusedLastInterval: 100 });
    expect(summaries[1]!.fields).toMatchObject({ refusedLastInterval: 0 });
    expect(recorded.lines.filter((line) => line.level === 'error')).toHaveLength(1);
  });

  it('marks the dependency down on a failure that is an outage, and only on those', async () => {
    probeAnswers = false;
    const g = guard({ isOutage: (error) => (error as Error).message === 'connection refused' });
    await g.run(async () => Promise.reject(new Error('topic authorization failed'))).catch(() => {});
    expect(g.available).toBe(true);
    await g.run(async () => Promise.reject(new Error('connection refused'))).catch(() => {});
    expect(g.available).toBe(false);
    expect(recorded.lines[0]!.fields).toMatchObject({ reason: 'connection refused' });
  });

  it('answers the call that finds the outage as every refused call after it: unavailable, with its cause', async () => {
    probeAnswers = false;
    const g = guard({ isOutage: (error) => (error as Error).message === 'connection refused' });
    const refused = new Error('connection refused');
    const first = await g.run(async () => Promise.reject(refused)).catch((error: unknown) => error);
    const next = await g.run(async () => 'never called').catch((error: unknown) => error);
    for (const error of [first, next]) {
      expect(error).toBeInstanceOf(DependencyUnavailableError);
      expect(error).toMatchObject({ dependency: 'kafka', label: 'The usage log' });
    }
    expect((first as Error).cause).toBe(refused);
    // a failure that is not an outage stays what it is
    const other = new Error('topic authorization failed');
    const healthy = guard();
    await expect(healthy.run(async () => Promise.reject(other))).rejects.toBe(other);
  });

  it('a second outage reports only its own refused calls', async () => {
    probeAnswers = false;
    const g = guard({ isOutage: (error) => (error as Error).message === 'connection refused' });
    const outage = async (refusedCalls: number) => {
      probeAnswers = false;
      await g.run(async () => Promise.reject(new Error('connection refused'))).catch(() => {});
      for (let i = 0; i < refusedCalls; i++) await g.run(async () => 0).catch(() => {});
      probeAnswers = true;
      await vi.advanceTimersByTimeAsync(500);
      expect(g.available).toBe(true);
    };
    await outage(4);
    await outage(2);
    const recoveries = recorded.lines.filter((line) => line.msg === 'kafka available again');
    expect(recoveries.map((line) => line.fields.refused)).toEqual([4, 2]);
  });

  it('an outage found twice at once is one outage: one line, one summary that stops when it ends', async () => {
    probeAnswers = false;
    const g = guard({
      whenSlow: 'probe',
      summaryIntervalMs: 5000,
      isOutage: (error) => (error as Error).message === 'connection refused',
    });
    // a slow call has the probe running (it will not answer) when another call finds the outage
    await outcomeOf(g.run(() => new Promise(() => {})));
    await vi.advanceTimersByTimeAsync(1300);
    await g.run(async () => Promise.reject(new Error('connection refused'))).catch(() => {});
    expect(g.available).toBe(false);
    await vi.advanceTimersByTimeAsync(1000); // the slow call's probe times out: down already
    await vi.advanceTimersByTimeAsync(4000);
    expect(recorded.lines.filter((line) => line.level === 'error')).toHaveLength(1);
    expect(recorded.lines.filter((line) => line.msg === 'kafka still unavailable')).toHaveLength(1);
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(1000);
    expect(g.available).toBe(true);
    const linesAtRecovery = recorded.lines.length;
    await vi.advanceTimersByTimeAsync(30_000);
    expect(recorded.lines).toHaveLength(linesAtRecovery);
  });

  /** A call that never answers, started `afterMs` after a quick one that starts the watchdog. */
  const stuckAfter = async (g: DependencyGuard, afterMs: number) => {
    await expect(g.run(async () => 'quick')).resolves.toBe('quick');
    await vi.advanceTimersByTimeAsync(afterMs);
    return outcomeOf(g.run(() => new Promise<string>(() => {})));
  };
  const givenUp = (outcome: () => unknown) =>
    (outcome() as { error?: unknown } | undefined)?.error instanceof DependencyUnavailableError;

  it('checks waits every quarter of waitMs: a call past the bound is given up on at the next tick', async () => {
    probeAnswers = false;
    const g = guard({ waitMs: 400 });
    const stuck = await stuckAfter(g, 10); // ticks at 100, 200, ... ms; the bound passes at 410 ms
    await vi.advanceTimersByTimeAsync(489); // 499 ms
    expect(givenUp(stuck)).toBe(false);
    await vi.advanceTimersByTimeAsync(1); // the tick at 500 ms
    expect(givenUp(stuck)).toBe(true);
  });

  it('checks waits at least every 250 ms however long waitMs is', async () => {
    probeAnswers = false;
    const g = guard({ waitMs: 4000 });
    const stuck = await stuckAfter(g, 10);
    await vi.advanceTimersByTimeAsync(4239); // 4249 ms
    expect(givenUp(stuck)).toBe(false);
    await vi.advanceTimersByTimeAsync(1); // the tick at 4250 ms, not 4500 ms
    expect(givenUp(stuck)).toBe(true);
  });

  it('checks waits at most every 10 ms however short waitMs is', async () => {
    probeAnswers = false;
    const g = guard({ waitMs: 20 });
    const stuck = await stuckAfter(g, 1); // ticks at 10, 20, 30 ms; the bound passes at 21 ms
    await vi.advanceTimersByTimeAsync(28); // 29 ms
    expect(givenUp(stuck)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(givenUp(stuck)).toBe(true);
  });

  /** A probe that answers or fails at once, as `probeAnswers` says. */
  const quickProbe = async () => {
    probes++;
    if (!probeAnswers) throw new Error('still down');
  };
  const refusedIsOutage = (error: unknown) => (error as Error).message === 'connection refused';
  const findOutage = (g: DependencyGuard) =>
    g.run(async () => Promise.reject(new Error('connection refused'))).catch(() => {});

  /** A guard with the default probe interval and summary period. */
  const defaultedGuard = () => {
    const g = new DependencyGuard({
      name: 'redis',
      label: 'The cache',
      waitMs: 1000,
      whenSlow: 'fail',
      probe: quickProbe,
      isOutage: refusedIsOutage,
      log: recorded.log,
    });
    guards.push(g);
    return g;
  };

  it('probes at once when the outage is found, then every 500 ms unless told otherwise', async () => {
    const g = defaultedGuard();
    probeAnswers = true;
    await findOutage(g);
    await vi.advanceTimersByTimeAsync(0);
    expect(g.available).toBe(true); // the first probe runs without waiting
    probeAnswers = false;
    await findOutage(g);
    await vi.advanceTimersByTimeAsync(100);
    expect(probes).toBe(2);
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(399); // 499 ms after the failed probe
    expect(g.available).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(g.available).toBe(true);
    expect(probes).toBe(3);
  });

  it('summarizes a lasting outage every 60 s unless told otherwise, with its length in seconds', async () => {
    probeAnswers = false;
    const g = defaultedGuard();
    await findOutage(g);
    const summaries = () => recorded.lines.filter((line) => line.msg === 'redis still unavailable');
    await vi.advanceTimersByTimeAsync(59_999);
    expect(summaries()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(summaries().map((line) => line.fields)).toEqual([
      { dependency: 'redis', reason: 'connection refused', seconds: 60, refusedLastInterval: 0 },
    ]);
  });

  it("counts in a second outage's first summary only the calls it refused, and its own seconds", async () => {
    const g = guard({ probe: quickProbe, isOutage: refusedIsOutage, summaryIntervalMs: 10_000 });
    probeAnswers = false;
    await findOutage(g);
    for (let i = 0; i < 3; i++) await g.run(async () => 0).catch(() => {});
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(200); // recovered before any summary
    expect(g.available).toBe(true);
    probeAnswers = false;
    await findOutage(g);
    for (let i = 0; i < 2; i++) await g.run(async () => 0).catch(() => {});
    await vi.advanceTimersByTimeAsync(10_000);
    const summaries = recorded.lines.filter((line) => line.msg === 'kafka still unavailable');
    expect(summaries.map((line) => line.fields)).toEqual([
      { dependency: 'kafka', reason: 'connection refused', seconds: 10, refusedLastInterval: 2 },
    ]);
  });

  it('summarizes with the length rounded to the second, and ends with every call the outage refused', async () => {
    const g = guard({ probe: quickProbe, isOutage: refusedIsOutage, summaryIntervalMs: 1600 });
    probeAnswers = false;
    await findOutage(g);
    for (let i = 0; i < 3; i++) await g.run(async () => 0).catch(() => {});
    await vi.advanceTimersByTimeAsync(1600); // the first summary: 1.6 s
    for (let i = 0; i < 2; i++) await g.run(async () => 0).catch(() => {});
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(200);
    expect(g.available).toBe(true);
    expect(recorded.lines.map((line) => [line.msg, line.fields.seconds])).toEqual([
      ['kafka unavailable', undefined],
      ['kafka still unavailable', 2],
      ['kafka available again', 1.8],
    ]);
    // the summary counts its interval's refusals; the end, the whole outage's
    expect(recorded.lines[1]!.fields.refusedLastInterval).toBe(3);
    expect(recorded.lines[2]!.fields.refused).toBe(5);
  });

  it('logs the end of an outage with its length to a tenth of a second', async () => {
    const g = guard({ probe: quickProbe, isOutage: refusedIsOutage }); // probes every 200 ms
    probeAnswers = false;
    await findOutage(g);
    await vi.advanceTimersByTimeAsync(1250);
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(150); // the probe at 1400 ms answers
    expect(g.available).toBe(true);
    expect(recorded.lines.at(-1)).toEqual({
      level: 'info',
      msg: 'kafka available again',
      fields: { dependency: 'kafka', seconds: 1.4, refused: 0 },
    });
  });

  it('stops probing once closed: neither a probe waiting to run nor one under way is followed', async () => {
    for (const closeAtMs of [100, 1100]) {
      // at 100 ms the first probe is under way (it fails at 1000 ms); at 1100 ms the next waits for 1200 ms
      probeAnswers = false;
      probes = 0;
      recorded.lines.length = 0;
      const g = guard({ isOutage: refusedIsOutage });
      await findOutage(g);
      await vi.advanceTimersByTimeAsync(closeAtMs);
      g.close();
      probeAnswers = true;
      await vi.advanceTimersByTimeAsync(5000);
      expect(probes, `closed at ${closeAtMs} ms`).toBe(1);
      expect(vi.getTimerCount()).toBe(0);
      expect(recorded.lines.map((line) => line.msg)).toEqual(['kafka unavailable']);
    }
  });

  it('names its error DependencyUnavailableError', async () => {
    const g = guard({ isOutage: refusedIsOutage });
    const error = await g
      .run(async () => Promise.reject(new Error('connection refused')))
      .catch((e: unknown) => e);
    expect((error as Error).name).toBe('DependencyUnavailableError');
    expect(String(error)).toBe('DependencyUnavailableError: kafka is unavailable (connection refused)');
  });

  it('abandons a call found slow once, though it both finds the outage and is given up on with the rest', async () => {
    probeAnswers = false;
    const g = guard();
    const abandoned = vi.fn();
    const stuck = await outcomeOf(g.run(() => new Promise<string>(() => {}), abandoned));
    await vi.advanceTimersByTimeAsync(1250);
    expect(givenUp(stuck)).toBe(true);
    expect(abandoned).toHaveBeenCalledOnce();
  });

  it('a late failure of a call given up on changes nothing, though it looks like an outage', async () => {
    const g = guard({ isOutage: refusedIsOutage });
    const stuck = pending<string>();
    const outcome = await outcomeOf(g.run(() => stuck.promise));
    await vi.advanceTimersByTimeAsync(1250); // given up on; the probe answers at once
    expect(givenUp(outcome)).toBe(true);
    await vi.advanceTimersByTimeAsync(0);
    expect(g.available).toBe(true);
    stuck.reject(new Error('connection refused'));
    await vi.advanceTimersByTimeAsync(0);
    expect(g.available).toBe(true);
    expect(recorded.lines.map((line) => line.msg)).toEqual(['kafka unavailable', 'kafka available again']);
  });

  it('rounds a quarter of waitMs down to the millisecond for its tick', async () => {
    probeAnswers = false;
    const g = guard({ waitMs: 402 });
    const stuck = await stuckAfter(g, 10); // ticks every 100 ms, not 101; the bound passes at 412 ms
    await vi.advanceTimersByTimeAsync(489); // 499 ms
    expect(givenUp(stuck)).toBe(false);
    await vi.advanceTimersByTimeAsync(1); // the tick at 500 ms
    expect(givenUp(stuck)).toBe(true);
  });

  it('rounds the length of an outage to the nearest tenth of a second when it ends', async () => {
    const g = guard({ probe: quickProbe, isOutage: refusedIsOutage, probeIntervalMs: 290 });
    probeAnswers = false;
    await findOutage(g);
    await vi.advanceTimersByTimeAsync(1000); // probes at 0, 290, 580 and 870 ms fail
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(160); // the probe at 1160 ms answers: 1.16 s
    expect(g.available).toBe(true);
    expect(recorded.lines.at(-1)!.fields.seconds).toBe(1.2);
  });

  it('keeps no process alive with its timers: the watchdog, the summary and the probe', async () => {
    vi.useRealTimers();
    const refTimers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const g = guard({ probe: () => new Promise(() => {}), isOutage: refusedIsOutage });
    const before = refTimers();
    const stuck = g.run(() => new Promise<string>(() => {})).catch(() => {}); // starts the watchdog
    expect(refTimers()).toBe(before);
    await findOutage(g); // starts the summary and the first probe
    expect(g.available).toBe(false);
    expect(refTimers()).toBe(before);
    await stuck;
  });

  describe('when a slow call is probed', () => {
    it('keeps waiting for a slow call while the dependency answers its probe', async () => {
      const g = guard({ whenSlow: 'probe', name: 'database' });
      const slow = pending<string>();
      const result = await outcomeOf(g.run(() => slow.promise));
      await vi.advanceTimersByTimeAsync(5000);
      expect(result()).toBeUndefined();
      expect(probes).toBeGreaterThanOrEqual(1);
      expect(probes).toBeLessThanOrEqual(5); // once per waitMs, not once per watchdog tick
      slow.resolve('done');
      await vi.advanceTimersByTimeAsync(0);
      expect(result()).toEqual({ value: 'done' });
      expect(g.available).toBe(true);
      expect(recorded.lines).toEqual([]);
    });

    it('probes again each waitMs the call still waits, the earlier probe answered', async () => {
      const g = guard({ whenSlow: 'probe', name: 'database' });
      const slow = pending<string>();
      await outcomeOf(g.run(() => slow.promise));
      await vi.advanceTimersByTimeAsync(3100); // suspected at 1000, 2000 and 3000 ms
      expect(probes).toBe(3);
      expect(g.available).toBe(true);
      slow.resolve('done');
    });

    it('probes once for several calls found slow at the same moment', async () => {
      const g = guard({ whenSlow: 'probe', name: 'database' });
      const calls = Array.from({ length: 5 }, () => pending<string>());
      const outcomes = [];
      for (const call of calls) outcomes.push(await outcomeOf(g.run(() => call.promise)));
      await vi.advanceTimersByTimeAsync(1100); // all five waited past 1000 ms on the same tick
      expect(probes).toBe(1);
      for (const call of calls) call.resolve('done');
      await vi.advanceTimersByTimeAsync(0);
      expect(outcomes.map((outcome) => outcome())).toEqual(calls.map(() => ({ value: 'done' })));
      expect(g.available).toBe(true);
    });

    it('gives up on every waiting call when the probe does not answer either', async () => {
      probeAnswers = false;
      const g = guard({ whenSlow: 'probe', name: 'database' });
      const abandoned = vi.fn();
      const result = await outcomeOf(g.run(() => new Promise(() => {}), abandoned));
      await vi.advanceTimersByTimeAsync(1300);
      expect(result()).toBeUndefined(); // suspected, the probe still running
      await vi.advanceTimersByTimeAsync(1000);
      expect((result() as { error: unknown }).error).toBeInstanceOf(DependencyUnavailableError);
      expect(abandoned).toHaveBeenCalledOnce();
      expect(g.available).toBe(false);
    });
  });
});
