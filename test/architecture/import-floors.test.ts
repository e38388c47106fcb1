import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkImports, readFloors, type Violation } from './import-floors.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const LEAKY_HOUSE = path.join(import.meta.dirname, 'fixtures/leaky-house');

const byPlace = (a: Violation, b: Violation) =>
  a.kind.localeCompare(b.kind) || a.from.localeCompare(b.from) || a.to.localeCompare(b.to);

describe('the import rules of libs/README.md', () => {
  it('hold in this repository', () => {
    const violations = checkImports(ROOT);
    const listed = violations
      .map((v) => (v.kind === 'circle' ? `circle: ${v.to}` : `${v.kind}: ${v.from} -> ${v.to}`))
      .join('\n');
    expect(violations, `libs/README.md's rules are broken:\n${listed}`).toEqual([]);
  });

  it('give every lib folder of this repository a floor', () => {
    const floors = readFloors(ROOT);
    expect(floors.get('money')).toBe(1);
    expect(floors.get('usage')! < floors.get('billing')!).toBe(true);
    expect([...floors.values()].every((floor) => floor >= 1)).toBe(true);
  });

  it('catch each kind of breach in a house built to break them', () => {
    const expected: Violation[] = [
      { kind: 'upward', from: 'libs/ground/reaches-up.ts', to: 'libs/upper/index.ts' },
      { kind: 'imports-above', from: 'libs/ground/peeks-at-tests.ts', to: 'test/helper.ts' },
      { kind: 'inner-file', from: 'libs/upper/reaches-inside.ts', to: 'libs/left/inner.ts' },
      { kind: 'inner-file', from: 'services/beta/reaches-inside.ts', to: 'libs/ground/value.ts' },
      { kind: 'lib-imports-service', from: 'libs/upper/calls-service.ts', to: 'services/alpha/main.ts' },
      { kind: 'service-imports-service', from: 'services/beta/main.ts', to: 'services/alpha/main.ts' },
      { kind: 'circle', from: 'libs/left', to: 'libs/left -> libs/right -> libs/left' },
      {
        kind: 'circle',
        from: 'libs/left/index.ts',
        to: 'libs/left/index.ts -> libs/right/index.ts -> libs/left/index.ts',
      },
      { kind: 'unlisted', from: 'libs/unlisted', to: 'libs/README.md' },
      { kind: 'missing', from: 'libs/README.md', to: 'libs/gone' },
    ];
    expect(checkImports(LEAKY_HOUSE).sort(byPlace)).toEqual(expected.sort(byPlace));
  });

  it('let a lib import down and on its own floor, through index.ts', () => {
    const fromTop = checkImports(LEAKY_HOUSE).filter((v) => v.from.startsWith('libs/top/'));
    expect(fromTop).toEqual([]);
    expect(readFloors(LEAKY_HOUSE).get('top')).toBe(3);
  });
});
