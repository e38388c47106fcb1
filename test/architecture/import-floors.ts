/**
 * The import rules of libs/README.md, checked on a tree of files: each lib stands on the floor its
 * table gives, and
 *
 *   - a lib imports only libs on its own floor or below (`upward`);
 *   - a lib imports no service (`lib-imports-service`), and no service imports another
 *     (`service-imports-service`);
 *   - another lib is imported through its index.ts only (`inner-file`);
 *   - libs import each other in no circle, and no files of libs or services do (`circle`);
 *   - every lib folder has a row in the table and every row a folder (`unlisted`, `missing`);
 *   - no lib or service imports tests, benchmarks or bin/ (`imports-above`).
 *
 * Read: every `.ts` file under libs/ and services/ except `*.test.ts` (unit tests reach into their
 * own lib by design, and nothing imports them). test/, bench/ and bin/ stand above the house and
 * may import anything. Imports are read by TypeScript's own pre-processor (static, type-only,
 * re-exports and `import()` with a literal path); package imports are not arrows.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

export type ViolationKind =
  | 'upward'
  | 'lib-imports-service'
  | 'service-imports-service'
  | 'inner-file'
  | 'circle'
  | 'unlisted'
  | 'missing'
  | 'imports-above';

export interface Violation {
  kind: ViolationKind;
  /** The importing file (or, for a circle, the lib or file where the circle was entered). */
  from: string;
  /** What it imports; for a circle, the loop from `from` back to it, joined by ' -> '. */
  to: string;
}

/** Each lib's floor, as the `| lib | floor | ...` table of `<root>/libs/README.md` gives it. */
export function readFloors(root: string): Map<string, number> {
  const lines = readFileSync(path.join(root, 'libs/README.md'), 'utf8').split('\n');
  const cells = (line: string) =>
    line
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((cell) => cell.trim());
  const header = lines.findIndex((line) => /^\|\s*lib\s*\|\s*floor\s*\|/.test(line));
  if (header === -1) throw new Error('libs/README.md has no table starting "| lib | floor |"');
  const floors = new Map<string, number>();
  for (const line of lines.slice(header + 2)) {
    if (!line.trim().startsWith('|')) break;
    const [libCell = '', floorCell = ''] = cells(line);
    const lib = libCell
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/`/g, '')
      .replace(/\/$/, '');
    const floor = Number(floorCell);
    if (!/^[a-z0-9-]+$/.test(lib) || !Number.isInteger(floor)) {
      throw new Error(`libs/README.md: cannot read the row "${line.trim()}"`);
    }
    if (floors.has(lib)) throw new Error(`libs/README.md lists ${lib} twice`);
    floors.set(lib, floor);
  }
  return floors;
}

/** Relative paths (from root, with `/`) of the `.ts` files under `dir`, tests left out. */
function sourceFiles(root: string, dir: string): string[] {
  const found: string[] = [];
  const walk = (relative: string) => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) found.push(child);
    }
  };
  walk(dir);
  return found.sort();
}

/** The tree-relative paths a file imports by a relative specifier, `.js` read as the `.ts` beside it. */
function importsOf(root: string, file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(path.join(root, file), 'utf8'), true, true);
  return importedFiles
    .map((imported) => imported.fileName)
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) =>
      path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)).replace(/\.js$/, '.ts'),
    );
}

/** `libs/<lib>` or `services/<service>` of a path, with the path inside it. */
function place(file: string): { area: 'libs' | 'services' | 'other'; name: string; inner: string } {
  const [area = '', name = '', ...rest] = file.split('/');
  if ((area === 'libs' || area === 'services') && rest.length > 0)
    return { area, name, inner: rest.join('/') };
  return { area: 'other', name: '', inner: file };
}

/** Every loop of `graph` (its strongly connected parts of more than one node, or a self-loop). */
function circles(graph: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  let next = 0;
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next += 1;
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const part: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        part.push(member);
      } while (member !== node);
      if (part.length > 1 || graph.get(node)?.has(node)) found.push(loopThrough(graph, new Set(part)));
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** The shortest way from the first (sorted) member of `part` back to itself, inside `part`. */
function loopThrough(graph: Map<string, Set<string>>, part: Set<string>): string[] {
  const start = [...part].sort()[0]!;
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const target of [...(graph.get(node) ?? [])].sort()) {
      if (!part.has(target)) continue;
      if (target === start) {
        const loop = [node];
        while (loop[0] !== start) loop.unshift(cameFrom.get(loop[0]!)!);
        return [...loop, start];
      }
      if (!cameFrom.has(target)) {
        cameFrom.set(target, node);
        queue.push(target);
      }
    }
  }
  return [...part].sort();
}

/** Every breach of the rules in the tree at `root` (an empty list: the house is in order). */
export function checkImports(root: string): Violation[] {
  const floors = readFloors(root);
  const violations: Violation[] = [];
  const libFolders = readdirSync(path.join(root, 'libs'), { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  for (const lib of libFolders) {
    if (!floors.has(lib)) violations.push({ kind: 'unlisted', from: `libs/${lib}`, to: 'libs/README.md' });
  }
  for (const lib of floors.keys()) {
    if (!libFolders.includes(lib))
      violations.push({ kind: 'missing', from: 'libs/README.md', to: `libs/${lib}` });
  }

  const files = [...sourceFiles(root, 'libs'), ...sourceFiles(root, 'services')];
  const fileGraph = new Map<string, Set<string>>();
  const libGraph = new Map<string, Set<string>>(libFolders.map((lib) => [lib, new Set<string>()]));
  for (const file of files) {
    const from = place(file);
    const targets = importsOf(root, file);
    fileGraph.set(file, new Set(targets));
    for (const target of targets) {
      const to = place(target);
      const breach = (kind: ViolationKind) => violations.push({ kind, from: file, to: target });
      if (to.area === 'other') {
        if (/^(test|bench|bin)\//.test(target) || target.endsWith('.test.ts')) breach('imports-above');
        continue;
      }
      if (to.area === from.area && to.name === from.name) continue; // inside one lib or service
      if (to.area === 'services') {
        breach(from.area === 'libs' ? 'lib-imports-service' : 'service-imports-service');
        continue;
      }
      if (to.inner !== 'index.ts') breach('inner-file');
      if (from.area === 'libs') {
        libGraph.get(from.name)?.add(to.name);
        const own = floors.get(from.name);
        const theirs = floors.get(to.name);
        if (own !== undefined && theirs !== undefined && theirs > own) breach('upward');
      }
    }
  }
  for (const loop of circles(libGraph)) {
    violations.push({
      kind: 'circle',
      from: `libs/${loop[0]}`,
      to: loop.map((lib) => `libs/${lib}`).join(' -> '),
    });
  }
  for (const loop of circles(fileGraph)) {
    violations.push({ kind: 'circle', from: loop[0]!, to: loop.join(' -> ') });
  }
  return violations;
}
