/**
 * How amounts read on a printed invoice. Values stay exact decimal text throughout (never a
 * float): money keeps every significant digit but at least 2 decimals, so 49.99000000 prints as
 * 49.99 and a sub-cent unit price of 0.00125000 stays 0.00125.
 */
export function formatAmount(decimal: string, minimumFractionDigits = 2): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', fraction = ''] = (negative ? decimal.slice(1) : decimal).split('.');
  let kept = fraction.replace(/0+$/, '');
  if (kept.length < minimumFractionDigits) kept = kept.padEnd(minimumFractionDigits, '0');
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '-' : ''}${grouped}${kept ? `.${kept}` : ''}`;
}

/** Invoice item quantities: 2.0000 prints as 2, 1.5000 as 1.5. */
export function formatQuantity(decimal: string): string {
  return formatAmount(decimal, 0);
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** "CA" -> "Canada"; a code the runtime does not know prints as itself. */
export function countryName(code: string): string {
  try {
    return regionNames.of(code.trim().toUpperCase()) ?? code;
  } catch {
    return code;
  }
}
