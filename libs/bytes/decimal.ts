/**
 * Non-negative integers written in decimal straight into a buffer, as `String(n)` writes them,
 * without building a string first: the log's event lines and the Redis requests are written this
 * way byte by byte. Integers past 1e9 (a time in ms has 13 digits) are written in two halves of at
 * most 9 digits, which V8 divides as small integers.
 */

/** How many bytes `writeDecimal` takes for `n` (a non-negative safe integer). */
export function decimalLength(n: number): number {
  if (n < 1e9) return digitCount(n);
  return digitCount(Math.floor(n / 1e9)) + 9;
}

/** Writes `n` at `at` and returns the offset after it; anything but a non-negative safe integer as String(n). */
export function writeDecimal(out: Buffer, at: number, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) return at + out.write(String(n), at, 'latin1');
  if (n < 1e9) return writeDigits(out, at, n, digitCount(n));
  const high = Math.floor(n / 1e9);
  at = writeDigits(out, at, high, digitCount(high));
  return writeDigits(out, at, n - high * 1e9, 9);
}

/** The last `digits` digits of `n` (< 1e9), zero-padded on the left. */
function writeDigits(out: Buffer, at: number, n: number, digits: number): number {
  const end = at + digits;
  for (let i = end - 1; i >= at; i--) {
    const rest = (n / 10) | 0;
    out[i] = 0x30 + n - rest * 10;
    n = rest;
  }
  return end;
}

function digitCount(n: number): number {
  let digits = 1;
  for (let rest = n; rest >= 10; rest = (rest / 10) | 0) digits++;
  return digits;
}
