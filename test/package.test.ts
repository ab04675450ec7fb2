/**
 * The packed package, as a user gets it: `npm pack`, install the tarball into a fresh ESM project,
 * import every subpath in package.json's `exports` from JavaScript and type-check an import of each
 * from TypeScript against the shipped declarations.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
  peerDependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
};
const subpaths = Object.keys(pkg.exports)
  .filter((k) => k !== './package.json')
  .map((k) => (k === '.' ? pkg.name : `${pkg.name}/${k.slice(2)}`));

let project = '';
/** A second project with the package alone: no optional peer installed. */
let bare = '';

function run(cmd: string, args: string[], cwd: string): string {
  try {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed:\n${stdout ?? ''}${stderr ?? ''}`);
  }
}

beforeAll(() => {
  project = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-pack-'));
  run('npm', ['run', '--silent', 'build'], root);
  const tarball =
    run('npm', ['pack', '--silent', '--pack-destination', project], root)
      .trim()
      .split('\n')
      .pop() ?? '';
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  );
  // Optional peers at the versions we test with, so every adapter subpath can load.
  const peers = Object.keys(pkg.peerDependencies ?? {}).map(
    (p) => `${p}@${pkg.devDependencies[p] ?? 'latest'}`,
  );
  run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      join(project, tarball),
      ...peers,
      `@types/node@${pkg.devDependencies['@types/node']}`,
      // Types a TypeScript user of the Express adapter installs anyway.
      `@types/express@${pkg.devDependencies['@types/express']}`,
    ],
    project,
  );
  bare = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-bare-'));
  writeFileSync(
    join(bare, 'package.json'),
    JSON.stringify({ name: 'bare', private: true, type: 'module' }),
  );
  run(
    'npm',
    [
      'install',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      join(project, tarball),
    ],
    bare,
  );
}, 240_000);

afterAll(() => {
  for (const dir of [project, bare]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships no tests and no sources outside dist', () => {
    const files = run('npm', ['pack', '--dry-run', '--json'], root);
    const list =
      (JSON.parse(files) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
    expect(list.some((f) => f.includes('.test.'))).toBe(false);
    expect(
      list.every(
        (f) => f.startsWith('dist/') || ['package.json', 'README.md', 'LICENSE'].includes(f),
      ),
    ).toBe(true);
  });

  it.each(subpaths)('imports %s from a fresh ESM project', (specifier) => {
    const out = run(
      'node',
      [
        '--input-type=module',
        '-e',
        `const m = await import(${JSON.stringify(specifier)}); console.log(Object.keys(m).length);`,
      ],
      project,
    );
    expect(Number(out.trim())).toBeGreaterThan(0);
  });

  it.each(subpaths)('requires %s from CommonJS (require of ESM, Node >= 20.19)', (specifier) => {
    const out = run(
      'node',
      [
        '--no-warnings',
        '--input-type=commonjs',
        '-e',
        `const m = require(${JSON.stringify(specifier)}); console.log(Object.keys(m).length);`,
      ],
      project,
    );
    expect(Number(out.trim())).toBeGreaterThan(0);
  });

  it('type-checks an import of every subpath against the shipped declarations', () => {
    const lines = subpaths.map((s, i) => `import * as m${i} from ${JSON.stringify(s)};`);
    lines.push(`export const all = [${subpaths.map((_, i) => `m${i}`).join(', ')}];`);
    lines.push(`import { compilePolicies, MemoryStore } from ${JSON.stringify(pkg.name)};`);
    lines.push(
      `const store = new MemoryStore({ policies: [{ name: 'p', kind: 'rate', limit: 1, windowSeconds: 1 }] });`,
    );
    lines.push(`export const d = store.decideSync({ caller: 'c', method: 'SendMessage' });`);
    lines.push(`export const set = compilePolicies([]);`);
    writeFileSync(join(project, 'check.ts'), lines.join('\n'));
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    run(
      'node',
      [
        tsc,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--target',
        'es2022',
        '--types',
        'node',
        'check.ts',
      ],
      project,
    );
  });

  it('runs the CLI with no optional peer installed (--help, simulate)', () => {
    const bin = join(bare, 'node_modules', '.bin', 'a2a-ratelimit');
    expect(run(bin, ['--help'], bare)).toMatch(/demo[\s\S]*serve[\s\S]*simulate[\s\S]*probe/);
    const out = run(bin, ['simulate', '--callers', '2', '--clients', 'ours', '--json'], bare);
    const report = JSON.parse(out.trim().split('\n').pop() ?? '{}') as {
      ours?: { calls?: number };
    };
    expect(report.ours?.calls).toBe(60);
  });

  it('imports the peer-free subpaths with no optional peer installed', () => {
    for (const specifier of [
      pkg.name,
      `${pkg.name}/testing`,
      `${pkg.name}/client`,
      `${pkg.name}/redis`,
    ]) {
      const code = `const m = await import(${JSON.stringify(specifier)}); console.log(Object.keys(m).length);`;
      expect(Number(run('node', ['--input-type=module', '-e', code], bare).trim())).toBeGreaterThan(
        0,
      );
    }
  });
});
