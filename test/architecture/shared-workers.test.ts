import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The unit and integration files share their workers' modules (vitest.config.ts, `isolate: false`):
 * what one file changes in a module or a global, the next file in that worker sees. So none may
 * mock a module or stub a global, and a file that fakes timers must give the real ones back. (A
 * spy on a module object, restored after its test, is allowed.) test/architecture holds the
 * forbidden calls as data, and the embedded files run in workers of their own.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const SHARED = path.join(ROOT, 'test');
const OWN_WORKERS = new Set(['embedded', 'architecture']);
/** Where the unit project's files are (vitest.config.ts), besides test/architecture. */
const UNIT_ROOTS = ['libs', 'services', 'bin', 'bench', 'clients/node/src'];

/** What in a file's text would leak into the next file of its worker. */
function leaksOf(text: string): string[] {
  const leaks: string[] = [];
  for (const call of ['vi.mock(', 'vi.doMock(', 'vi.stubGlobal(', 'vi.stubEnv(']) {
    if (text.includes(call)) leaks.push(call);
  }
  if (text.includes('vi.useFakeTimers(') && !text.includes('vi.useRealTimers()')) {
    leaks.push('vi.useFakeTimers( without vi.useRealTimers()');
  }
  return leaks;
}

function sharedFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return dir === SHARED && OWN_WORKERS.has(entry.name) ? [] : sharedFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

function unitTestFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : unitTestFiles(full);
    return entry.name.endsWith('.test.ts') ? [full] : [];
  });
}

describe('the unit and integration files, sharing their workers', () => {
  it('mock no module, stub no global and give fake timers back', () => {
    const unit = UNIT_ROOTS.flatMap((root) => unitTestFiles(path.join(ROOT, root)));
    expect(unit.length).toBeGreaterThan(100);
    expect(unit).toContain(path.join(ROOT, 'libs/portal/alerts.test.ts'));
    const files = [...sharedFiles(SHARED), ...unit];
    expect(files.length).toBeGreaterThan(200);
    const leaking = files
      .map((file) => ({ file: path.relative(ROOT, file), leaks: leaksOf(readFileSync(file, 'utf8')) }))
      .filter(({ leaks }) => leaks.length);
    expect(leaking).toEqual([]);
  });

  it('are told apart from a file that would leak', () => {
    expect(leaksOf("vi.mock('node:crypto');")).toEqual(['vi.mock(']);
    expect(leaksOf("vi.stubEnv('TZ', 'UTC'); vi.stubGlobal('fetch', f);")).toEqual([
      'vi.stubGlobal(',
      'vi.stubEnv(',
    ]);
    expect(leaksOf('vi.useFakeTimers();')).toEqual(['vi.useFakeTimers( without vi.useRealTimers()']);
    expect(leaksOf('vi.useFakeTimers(); try {} finally { vi.useRealTimers(); }')).toEqual([]);
  });
});
