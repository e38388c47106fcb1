/**
 * The requests of one server whose work is still running, for a graceful shutdown: once the server
 * drains, its front end answers new requests 503 (`draining`), and closing the database or Redis
 * waits until `idle` resolves, so no request still running fails on a closed connection. Each
 * front end calls `begin` when a request's work starts and `finish` exactly once when it ends
 * (answered, refused, or its client gone).
 */
export class InFlightRequests {
  private running = 0;
  private waiters: (() => void)[] = [];
  private drainingNow = false;

  /** True once `startDraining` ran: new requests are refused. */
  get draining(): boolean {
    return this.drainingNow;
  }

  get count(): number {
    return this.running;
  }

  begin(): void {
    this.running++;
  }

  finish(): void {
    if (this.running === 0) throw new Error('InFlightRequests.finish without a matching begin');
    this.running--;
    if (this.running === 0 && this.waiters.length) for (const wake of this.waiters.splice(0)) wake();
  }

  startDraining(): void {
    this.drainingNow = true;
  }

  /** Resolves once no request is running (at once when none is). */
  idle(): Promise<void> {
    return this.running === 0 ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }
}
