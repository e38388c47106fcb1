/**
 * Exact decimal arithmetic on BigInt. A value is an integer count of 10^-scale units, so
 * "12.5" at scale 8 is 1_250_000_000n. Money never passes through a JS float.
 */

export const MONEY_SCALE = 8;
export const QUANTITY_SCALE = 4;

const DECIMAL = /^([+-])?(\d+)(?:\.(\d+))?$/;

/**
 * Parses a decimal string. With `rounding: 'reject'` (the default) a value with more fractional
 * digits than `scale` throws, so callers decide explicitly where precision may be dropped.
 */
export function parseScaled(
  text: string,
  scale: number,
  rounding: 'reject' | 'half-even' = 'reject',
): bigint {
  const match = DECIMAL.exec(text.trim());
  if (!match) throw new RangeError(`not a decimal number: ${JSON.stringify(text)}`);
  const [, sign, whole = '0', fraction = ''] = match;
  const digits = BigInt(whole + fraction);
  let value = rescale(digits, fraction.length, scale, rounding);
  if (sign === '-') value = -value;
  return value;
}

export function formatScaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

/** Changes the scale of a value; dropping digits rounds half to even (banker's rounding). */
export function rescale(
  value: bigint,
  from: number,
  to: number,
  rounding: 'reject' | 'half-even' = 'half-even',
): bigint {
  if (to >= from) return value * 10n ** BigInt(to - from);
  const divisor = 10n ** BigInt(from - to);
  if (rounding === 'reject' && value % divisor !== 0n) {
    throw new RangeError(`more than ${to} fractional digits`);
  }
  return divideRoundHalfEven(value, divisor);
}

export function divideRoundHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator === 0n) throw new RangeError('division by zero');
  if (denominator < 0n) return divideRoundHalfEven(-numerator, -denominator);
  const quotient = numerator / denominator;
  const remainder = numerator % denominator;
  if (remainder === 0n) return quotient;
  const twice = 2n * (remainder < 0n ? -remainder : remainder);
  const awayFromZero = numerator < 0n ? quotient - 1n : quotient + 1n;
  if (twice > denominator) return awayFromZero;
  if (twice < denominator) return quotient;
  return quotient % 2n === 0n ? quotient : awayFromZero;
}

/** a (at aScale) x b (at bScale), rounded half-even to outScale. */
export function multiplyScaled(
  a: bigint,
  aScale: number,
  b: bigint,
  bScale: number,
  outScale: number,
): bigint {
  return rescale(a * b, aScale + bScale, outScale);
}

export function addScaled(...values: bigint[]): bigint {
  return values.reduce((sum, v) => sum + v, 0n);
}

export function compareScaled(a: bigint, b: bigint): -1 | 0 | 1 {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function parseMoney(text: string): bigint {
  return parseScaled(text, MONEY_SCALE);
}

export function formatMoney(value: bigint): string {
  return formatScaled(value, MONEY_SCALE);
}

export function formatQuantity(value: bigint): string {
  return formatScaled(value, QUANTITY_SCALE);
}
