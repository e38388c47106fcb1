import { ApiError } from '../../errors/index.js';
import { formatMoney, isInMinorUnits, knownMinorUnitDigits, parseMoney } from '../../money/index.js';
import type { InvoiceStatus } from '../../schemas/index.js';

/**
 * How money moves an invoice's status (docs/architecture.md, "Rules of the contract"): `amount_paid` counts completed payments and
 * credit memos, `balance` = total - amount_paid, refunds are tracked apart in `amount_refunded`.
 */

export type CollectibleStatus = 'POSTED' | 'PARTIALLY_PAID' | 'PAID';

/**
 * The statuses of an issued invoice that may still have a balance: payments and credit memos
 * apply to them while `balance` > 0. A refund gives back money paid; it does not cancel what is
 * still owed, so a refunded invoice with a balance left (a partial payment given back) is paid
 * like any other (docs/decisions.md "A refund never cancels what is still owed").
 */
export const PAYABLE_STATUSES: readonly InvoiceStatus[] = [
  'POSTED',
  'PARTIALLY_PAID',
  'PARTIALLY_REFUNDED',
  'REFUNDED',
];

/** Whether money can be applied to an invoice: issued, not withdrawn, and a balance left. */
export function isPayable(status: InvoiceStatus, balance: bigint): boolean {
  return PAYABLE_STATUSES.includes(status) && balance > 0n;
}

/**
 * POSTED with nothing paid, PARTIALLY_PAID with part of it, PAID once nothing is left. A payment
 * on a refunded invoice with a balance moves it the same way: what is paid decides, never what
 * went back (amount_refunded keeps that).
 */
export function statusForAmountPaid(total: bigint, amountPaid: bigint): CollectibleStatus {
  if (amountPaid >= total) return 'PAID';
  return amountPaid > 0n ? 'PARTIALLY_PAID' : 'POSTED';
}

/**
 * Posting first consumes the customer's credit balance, up to the total (docs/architecture.md, "Rules of the contract"). A zero-total
 * invoice is settled the moment it is posted.
 */
export function settleOnPosting(
  total: string,
  creditBalance: string,
): { credit_applied: string; status: CollectibleStatus } {
  const owed = parseMoney(total);
  const credit = parseMoney(creditBalance);
  const applied = credit <= 0n ? 0n : credit < owed ? credit : owed;
  return { credit_applied: formatMoney(applied), status: statusForAmountPaid(owed, applied) };
}

/** REFUNDED once every refundable (paid) amount went back, PARTIALLY_REFUNDED before. */
export function statusAfterRefund(refundableLeft: bigint): 'REFUNDED' | 'PARTIALLY_REFUNDED' {
  return refundableLeft <= 0n ? 'REFUNDED' : 'PARTIALLY_REFUNDED';
}

/**
 * Money that moves (payments, credits, refunds) is payable amounts (docs/architecture.md, "Money"): whole units of
 * the currency's minor unit. `exact` is the one other amount accepted: an invoice's whole balance
 * (or refundable part), which an invoice issued before the rule may hold below a cent.
 */
export function assertPayableAmount(
  field: string,
  amount: bigint,
  currency: string,
  exact?: bigint | undefined,
): void {
  const digits = knownMinorUnitDigits(currency);
  // a currency without a known minor unit (an invoice stored before currencies were checked)
  // leaves amounts as typed: refusing them would leave the invoice unsettleable for good
  if (digits === undefined || amount === exact || isInMinorUnits(amount, currency)) return;
  throw ApiError.validation([
    {
      field,
      message: `Must be in whole ${currency} minor units (${digits === 0 ? 'no decimals' : `at most ${digits} decimals`}).`,
      code: 'invalid_format',
    },
  ]);
}
