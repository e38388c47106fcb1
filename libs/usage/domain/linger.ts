/**
 * How long a thin turn's reservations may wait, and what makes a turn thin.
 * `maxMs` is a bound, not a wait: a group goes as soon as the requests it waits for are there.
 */
export interface LingerOptions {
  /** The longest a held request waits (the event loop's timers have a millisecond's resolution). */
  maxMs: number;
  /** A group of at least this many events is not thin: it goes at the end of its turn, held or not. */
  thinEvents: number;
}

/** What the distributed ingest runs with (docs/decisions.md, "A short linger for thin turns"). */
export const DEFAULT_LINGER: LingerOptions = { maxMs: 1, thinEvents: 16 };

/**
 * Gathers the reservations of requests that arrive a little apart into one group, so that they
 * share one store round trip and one produce call (each costs the same whatever it carries: the
 * system calls and wake-ups of a round trip on either socket). Without it, a few connections in a
 * closed loop drift apart and each turn of the event loop carries one request, paying that fixed
 * cost alone; once gathered they are answered in one turn and come back together.
 *
 * The rule: a request is held only while the group it joins is thin (fewer than `thinEvents`
 * events) and smaller than the concurrency seen (`peak`: the most requests that were recording at
 * once); the group goes as soon as it reaches either, or after `maxMs`. A lone client (peak 1) is
 * never held, nor a request while `thinEvents` others are already on their way to the store or the
 * log (a busy turn: holding would only split it), nor one in the turn a group went (it joins that
 * group's store call). Holding changes only when a request reaches the store, never what it is
 * answered.
 *
 * A group that waits out `maxMs` tells one of two things. If none of the others was recording, fewer
 * clients than `peak` are sending now: `peak` drops to the requests that came, so a client that
 * went away costs one bounded wait. If some were on their way (`passed`: out of step, in a group
 * of their own), their round trip is longer than the bound, and waiting for them would cost every
 * group the whole bound: the linger then stops waiting for requests that passed it (a group goes
 * once the others came), and tries to gather everyone again every `PROBE_EVERY` groups, or as soon
 * as a group holds all of `peak` by itself.
 */
/** Groups let go while out of step before the linger waits for every client again. */
export const PROBE_EVERY = 32;

export class ThinTurnLinger {
  private held: (() => void)[] = [];
  private heldEvents = 0;
  private active = 0;
  private peak = 1;
  private timer: NodeJS.Timeout | undefined;
  /** Set from a group's release to the end of that turn. */
  private releasedThisTurn = false;
  /** Groups still to go without waiting for requests that passed (0: waits for every client). */
  private outOfStep = 0;

  constructor(private readonly options: LingerOptions) {}

  /** A request starts recording: it counts toward the concurrency until `leave`. */
  enter(): void {
    this.active++;
    if (this.active > this.peak) this.peak = this.active;
  }

  leave(): void {
    this.active--;
  }

  /**
   * undefined: go to the store now. Otherwise a promise that resolves when the group goes; every
   * member of a group resolves in the same turn, so their reservations share one store call.
   */
  hold(events: number): Promise<void> | undefined {
    const { thinEvents, maxMs } = this.options;
    // this one is counted in `active`, the held ones too: the others are further on
    const passed = this.active - 1 - this.held.length;
    if (
      this.held.length === 0 &&
      (this.target(passed) <= 1 || events >= thinEvents || this.releasedThisTurn || passed >= thinEvents)
    ) {
      this.went(1);
      return undefined;
    }
    return new Promise<void>((resolve) => {
      this.held.push(resolve);
      this.heldEvents += events;
      if (this.heldEvents >= thinEvents || this.held.length >= this.target(passed)) this.release();
      else this.timer ??= setTimeout(this.expire, maxMs);
    });
  }

  /** How many requests a group waits for, `passed` of the others being on their way. */
  private target(passed: number): number {
    return this.outOfStep > 0 ? this.peak - passed : this.peak;
  }

  /** The group waited out the bound: clients went away, or the others are a group behind. */
  private readonly expire = () => {
    this.timer = undefined;
    if (this.active > this.held.length) this.outOfStep = PROBE_EVERY;
    else this.peak = Math.max(1, this.held.length);
    this.release();
  };

  private release(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const group = this.held;
    this.went(group.length);
    this.held = [];
    this.heldEvents = 0;
    if (!this.releasedThisTurn) {
      this.releasedThisTurn = true;
      setImmediate(this.endTurn);
    }
    for (const resolve of group) resolve();
  }

  /** A group of `size` requests goes to the store. */
  private went(size: number): void {
    if (size >= this.peak) this.outOfStep = 0;
    else if (this.outOfStep > 0) this.outOfStep--;
  }

  private readonly endTurn = () => {
    this.releasedThisTurn = false;
  };

  /** For tests and metrics: the concurrency the linger aims at. */
  get concurrency(): number {
    return this.peak;
  }

  /** For tests and metrics: whether groups go without waiting for requests that passed. */
  get waitsForEveryClient(): boolean {
    return this.outOfStep === 0;
  }
}
