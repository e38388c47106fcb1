import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const PACKAGE = path.resolve(import.meta.dirname, '..');

async function sources(directory: string): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(directory, { withFileTypes: true })) {
    const file = path.join(directory, entry.name);
    if (entry.isDirectory()) files.push(...(await sources(file)));
    else if (entry.name.endsWith('.ts')) files.push(file);
  }
  return files;
}

/** The package stands alone: what a user installs must not reach into the service's code. */
describe('the client package', () => {
  it('imports only its own files, Node built-ins and its declared dependencies', async () => {
    const { dependencies, devDependencies } = JSON.parse(
      await readFile(path.join(PACKAGE, 'package.json'), 'utf8'),
    );
    for (const file of await sources(path.join(PACKAGE, 'src'))) {
      const test = file.endsWith('.test.ts');
      const text = await readFile(file, 'utf8');
      for (const [, specifier] of text.matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        const name = specifier!.startsWith('@')
          ? specifier!.split('/').slice(0, 2).join('/')
          : specifier!.split('/')[0]!;
        const allowed =
          specifier!.startsWith('node:') ||
          (specifier!.startsWith('./') || specifier!.startsWith('../')
            ? path.resolve(path.dirname(file), specifier!).startsWith(path.join(PACKAGE, 'src'))
            : name in dependencies || (test && (name in devDependencies || name === 'vitest')));
        expect(allowed, `${path.relative(PACKAGE, file)} imports ${specifier}`).toBe(true);
      }
    }
  });

  it('is an MIT-licensed ESM package whose entry points are its build', async () => {
    const manifest = JSON.parse(await readFile(path.join(PACKAGE, 'package.json'), 'utf8'));
    expect(manifest).toMatchObject({ type: 'module', license: 'MIT', types: './dist/index.d.ts' });
    expect(manifest.exports['.']).toMatchObject({ types: './dist/index.d.ts', import: './dist/index.js' });
    expect(manifest.files).toEqual(expect.arrayContaining(['dist', 'README.md', 'LICENSE']));
    expect(await readFile(path.join(PACKAGE, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
    expect((await stat(path.join(PACKAGE, 'README.md'))).size).toBeGreaterThan(1000);
  });
});
