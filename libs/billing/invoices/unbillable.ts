import { ApiError } from '../../errors/index.js';
import { isBillableCurrency } from '../../money/index.js';

/**
 * What retrying cannot fix: a period (or a change) composed from stored data that can never be
 * invoiced as it stands: an amount beyond what an invoice holds, a currency without a minor unit,
 * a price without tiers, a customer's region the tax table does not know. The composition is
 * pure, so it would fail the same way on every run: the billing run parks the subscription
 * (`reason` is what it records) instead of failing on it every time, and a request that meets it
 * is a 409 saying why, never a 500.
 */
export class UnbillableError extends ApiError {
  constructor(
    /** Why, in words an operator acts on; the parked subscription's reason. */
    readonly reason: string,
    options: { cause?: unknown } = {},
  ) {
    super('CONFLICT', `Cannot be invoiced: ${reason}.`, options);
    this.name = 'UnbillableError';
  }
}

/**
 * Runs a pure composition over stored data. A RangeError out of it (libs/money's unknown
 * currency, a tiered price without tiers or mode, a negative quantity) is a fault of that data,
 * thrown again on every retry: it becomes an UnbillableError. Anything else (a bug) stays what it
 * is, an internal error.
 */
export function composing<T>(compose: () => T): T {
  try {
    return compose();
  } catch (error) {
    if (error instanceof RangeError) throw new UnbillableError(error.message, { cause: error });
    throw error;
  }
}

/**
 * A currency without a minor unit (a row stored before currencies were checked at the door):
 * nothing in it can be rounded, so nothing of it can be billed.
 */
export function assertBillableCurrency(currency: string): void {
  if (!isBillableCurrency(currency)) {
    throw new UnbillableError(
      `its currency ${currency} has no known minor unit, so nothing can be billed in it`,
    );
  }
}
