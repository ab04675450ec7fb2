/**
 * The room map in docs/architecture.md matches the tree: every source file (tests and test
 * helpers aside) is named by a row — by its path under `src/` (or `packages/cli/src/`,
 * `packages/gateway/src/`), or by a
 * row's `folder/*` — and every file a row names exists. A split or a new room that is not
 * written down fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/** Package source folders: a row naming a file in one makes later names relative to it. */
const PACKAGES = ['packages/cli/src/', 'packages/gateway/src/'];

/** Every source file, as the room map spells it: `core/decide.ts`, `packages/cli/src/main.ts`. */
function sourceFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string, spell: (path: string) => string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path, spell);
      else if (/\.ts$/.test(name) && !/\.test\.ts$|\.test-helpers\.ts$/.test(name)) {
        out.push(spell(path));
      }
    }
  };
  walk('src', (path) => relative('src', path));
  for (const root of PACKAGES) walk(root, (path) => `${root}${relative(root, path)}`);
  return out.sort();
}

/** The room map's first column, each cell's backticked names resolved to paths (and globs). */
function roomNames(): string[] {
  const text = readFileSync('docs/architecture.md', 'utf8');
  const map = text.slice(
    text.indexOf('## Room map'),
    text.indexOf('\n## ', text.indexOf('## Room map') + 1),
  );
  const names: string[] = [];
  for (const line of map.split('\n')) {
    const cell = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (cell === undefined || cell.trim() === 'room' || cell.startsWith('---')) continue;
    let base = '';
    for (const [, name] of cell.matchAll(/`([^`]+)`/g)) {
      if (name === undefined) continue;
      // In a package's row, later names are relative to the first one's folder.
      const root = PACKAGES.find((p) => name.startsWith(p));
      if (root !== undefined) base = root;
      names.push(base !== '' && root === undefined ? `${base}${name}` : name);
    }
  }
  return names;
}

function matches(name: string, file: string): boolean {
  if (!name.includes('*')) return name === file;
  const pattern = new RegExp(
    `^${name.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`,
  );
  return pattern.test(file);
}

describe('docs/architecture.md room map', () => {
  const files = sourceFiles();
  const names = roomNames();

  it('names every source file', () => {
    const unnamed = files.filter((f) => !names.some((n) => matches(n, f)));
    expect(unnamed).toEqual([]);
  });

  it('names only files that exist', () => {
    const stale = names.filter((n) => !files.some((f) => matches(n, f)));
    expect(stale).toEqual([]);
  });
});
