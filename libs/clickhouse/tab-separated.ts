/** Escapes one value for ClickHouse's TabSeparated format (backslash, tab, newline, carriage return). */
export function tabSeparatedField(value: string): string {
  return /[\\\t\n\r\0]/.test(value) ? value.replace(/[\\\t\n\r\0]/g, escapeCharacter) : value;
}

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' };

function escapeCharacter(character: string): string {
  return ESCAPES[character]!;
}

/** One TabSeparated line; numbers and booleans are written as text, which is how Decimal stays exact. */
export function tabSeparatedRow(values: readonly (string | number | bigint)[]): string {
  let line = '';
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    line += (i ? '\t' : '') + (typeof value === 'string' ? tabSeparatedField(value) : String(value));
  }
  return `${line}\n`;
}

/** A SQL string literal (single quotes, backslash escapes) for the rare value inlined in a query. */
export function sqlString(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
