import { describe, expect, it } from 'vitest';
import { parseArgv } from './argv.js';

describe('console argv', () => {
  it('splits command words from --kebab-case flags', () => {
    expect(
      parseArgv(['org', 'set-limit', '--org', '3', '--requests-per-hour=500', '--at-period-end']),
    ).toEqual({
      words: ['org', 'set-limit'],
      flags: { org: '3', 'requests-per-hour': '500', 'at-period-end': true },
      repeated: [],
    });
  });

  it('names the flags given more than once', () => {
    expect(parseArgv(['--org', '1', '--org=2', '--name', 'X', '--org', '--name', 'Y']).repeated).toEqual([
      'org',
      'name',
    ]);
  });

  it('names a boolean flag given twice, whatever the value given first', () => {
    expect(parseArgv(['--draft=false', '--draft']).repeated).toEqual(['draft']);
    expect(parseArgv(['--draft', '--draft']).repeated).toEqual(['draft']);
  });

  it('takes a value beginning with a single dash as the value', () => {
    expect(parseArgv(['--amount', '-5', '--note', '- see ticket', '--draft']).flags).toEqual({
      amount: '-5',
      note: '- see ticket',
      draft: true,
    });
  });

  it('reads a flag with nothing before its = as the empty flag with that value', () => {
    expect(parseArgv(['--=x', 'word'])).toEqual({ words: ['word'], flags: { '': 'x' }, repeated: [] });
  });

  it('keeps JSON values whole', () => {
    expect(parseArgv(['--items', '[{"product_id": 1}]']).flags.items).toBe('[{"product_id": 1}]');
  });

  it('reads a word beginning with a single dash as a word, and a value after = whole', () => {
    expect(parseArgv(['refund', '-5', '--note=a=b', '--x=', '-y'])).toEqual({
      words: ['refund', '-5', '-y'],
      flags: { note: 'a=b', x: '' },
      repeated: [],
    });
  });
});
