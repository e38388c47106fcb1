import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The integration files share their workers' modules (vitest.config.ts, `isolate: false`): what
 * one file changes in a module or a global, the next file in that worker sees. So none may mock a
 * module or stub a global, and a file that fakes timers must give the real ones back.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const SHARED = path.join(ROOT, 'test');
const OWN_WORKERS = new Set(['embedded', 'architecture']);

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

describe('the integration files, sharing their workers', () => {
  it('mock no module, stub no global and give fake timers back', () => {
    const files = sharedFiles(SHARED);
    expect(files.length).toBeGreaterThan(100);
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
