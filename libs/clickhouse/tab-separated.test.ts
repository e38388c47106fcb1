import { describe, expect, it } from 'vitest';
import { sqlString, tabSeparatedField, tabSeparatedRow } from './tab-separated.js';

describe('TabSeparated encoding', () => {
  it('escapes the characters that would break a row or a field', () => {
    expect(tabSeparatedField('plain-key_1')).toBe('plain-key_1');
    expect(tabSeparatedField('a\tb\nc\\d\re\0')).toBe('a\\tb\\nc\\\\d\\re\\0');
    // each one alone, too: a carriage return or a NUL in an otherwise plain key
    const alone: [string, string][] = [
      ['\\', '\\\\'],
      ['\t', '\\t'],
      ['\n', '\\n'],
      ['\r', '\\r'],
      ['\0', '\\0'],
    ];
    for (const [character, escaped] of alone) {
      expect(tabSeparatedField(`k${character}1`), JSON.stringify(character)).toBe(`k${escaped}1`);
    }
  });

  it('writes a row of text and numbers, ending with a newline', () => {
    expect(tabSeparatedRow(['k\t1', 42, 10n, '0.10000000'])).toBe('k\\t1\t42\t10\t0.10000000\n');
  });

  it('quotes a string literal for SQL', () => {
    expect(sqlString("it's a \\ test")).toBe("'it\\'s a \\\\ test'");
  });
});
