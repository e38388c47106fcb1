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
 * group's store call). A group that had to wait out `maxMs` lowers `peak` to the requests that came,
 * so a client that went away costs one bounded wait, not one per request. Holding changes only
 * when a request reaches the store, never what it is answered.
 */
export class ThinTurnLinger {
  private held: (() => void)[] = [];
  private heldEvents = 0;
  private active = 0;
  private peak = 1;
  private timer: NodeJS.Timeout | undefined;
  /** Set from a group's release to the end of that turn. */
  private releasedThisTurn = false;

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
    if (
      this.held.length === 0 &&
      (this.peak <= 1 ||
        events >= thinEvents ||
        this.releasedThisTurn ||
        // this one is counted in `active`: the others are further on
        this.active - 1 >= thinEvents)
    ) {
      return undefined;
    }
    return new Promise<void>((resolve) => {
      this.held.push(resolve);
      this.heldEvents += events;
      if (this.heldEvents >= thinEvents || this.held.length >= this.peak) this.release();
      else this.timer ??= setTimeout(this.expire, maxMs);
    });
  }

  /** The group waited out the bound: fewer clients than `peak` are sending now. */
  private readonly expire = () => {
    this.timer = undefined;
    this.peak = Math.max(1, this.held.length);
    this.release();
  };

  private release(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    const group = this.held;
    this.held = [];
    this.heldEvents = 0;
    if (!this.releasedThisTurn) {
      this.releasedThisTurn = true;
      setImmediate(this.endTurn);
    }
    for (const resolve of group) resolve();
  }

  private readonly endTurn = () => {
    this.releasedThisTurn = false;
  };

  /** For tests and metrics: the concurrency the linger aims at. */
  get target(): number {
    return this.peak;
  }
}
