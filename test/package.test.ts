/**
 * The packed package, as a user gets it: `npm pack`, install the tarball into a fresh ESM project,
 * import every subpath in package.json's `exports` from JavaScript (and `require` it from
 * CommonJS) and type-check an import of each from TypeScript against the shipped declarations.
 * The library alone installs only what it uses (no CLI package in its production tree); the CLI
 * (`packages/cli`, `a2a-ratelimit-cli`) is packed and installed beside it as a user would.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { libBuildIsFresh } from './fixtures/package/lib-build-fresh.js';

const root = resolve(import.meta.dirname, '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies: Record<string, string>;
};
const subpaths = Object.keys(pkg.exports)
  .filter((k) => k !== './package.json')
  .map((k) => (k === '.' ? pkg.name : `${pkg.name}/${k.slice(2)}`));

const cliPkg = JSON.parse(readFileSync(join(root, 'packages', 'cli', 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
};

let project = '';
/** A second project with the package alone: no optional peer installed. */
let bare = '';
/** A third project with the CLI package (and the library it runs on), no optional peer. */
let cli = '';
/** The library's tarball, as packed. */
let tarballFile = '';

/** Total size of the files under `dir`, bytes (symlinks not followed). */
function sizeOf(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += sizeOf(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/** Every package in the production dependency tree of `dir` (npm ls), by name. */
function productionTree(dir: string): string[] {
  const out = run('npm', ['ls', '--all', '--omit=dev', '--json'], dir);
  interface Node {
    version?: string;
    dependencies?: Record<string, Node>;
  }
  const names = new Set<string>();
  const walk = (node: Node): void => {
    for (const [name, child] of Object.entries(node.dependencies ?? {})) {
      // An optional peer nobody installed is listed without a version: not in the tree.
      if (names.has(name) || child.version === undefined) continue;
      names.add(name);
      walk(child);
    }
  };
  walk(JSON.parse(out) as Node);
  return [...names].sort();
}

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
  // `npm test` has just built the library (`api:check`): build it again only if it is not a build
  // of the current sources. The CLI and the gateway engine are built here either way.
  if (!libBuildIsFresh(root)) run('npm', ['run', '--silent', 'build:lib'], root);
  run('npm', ['run', '--silent', 'build', '-w', 'a2a-ratelimit-gateway'], root);
  run('npm', ['run', '--silent', 'build', '-w', cliPkg.name], root);
  const tarball =
    run('npm', ['pack', '--silent', '--pack-destination', project], root)
      .trim()
      .split('\n')
      .pop() ?? '';
  tarballFile = join(project, tarball);
  const cliTarball =
    run('npm', ['pack', '--silent', '-w', cliPkg.name, '--pack-destination', project], root)
      .trim()
      .split('\n')
      .pop() ?? '';
  // The CLI depends on the gateway engine's package: packed from the workspace too.
  const gatewayTarball =
    run(
      'npm',
      ['pack', '--silent', '-w', 'a2a-ratelimit-gateway', '--pack-destination', project],
      root,
    )
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
  cli = mkdtempSync(join(tmpdir(), 'a2a-ratelimit-cli-'));
  writeFileSync(
    join(cli, 'package.json'),
    JSON.stringify({ name: 'cli-user', private: true, type: 'module' }),
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
      join(project, gatewayTarball),
      join(project, cliTarball),
    ],
    cli,
  );
}, 300_000);

afterAll(() => {
  for (const dir of [project, bare, cli]) if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the packed package', () => {
  const packed = (): string[] => {
    const files = run('npm', ['pack', '--dry-run', '--json'], root);
    return (
      (JSON.parse(files) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? []
    );
  };

  it('ships no tests, no CLI and no sources outside dist, and the docs', () => {
    const list = packed();
    expect(list.some((f) => f.includes('.test.'))).toBe(false);
    expect(list.some((f) => f.startsWith('packages/') || f.startsWith('dist/cli/'))).toBe(false);
    expect(
      list.filter(
        (f) =>
          !f.startsWith('dist/') &&
          !f.startsWith('docs/') &&
          !['package.json', 'README.md', 'LICENSE'].includes(f),
      ),
    ).toEqual([]);
    expect(list).toContain('docs/architecture.md');
  });

  it("every docs/ file the README names is in the package (the README's links resolve)", () => {
    const list = new Set(packed());
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const named = [
      ...new Set([...readme.matchAll(/\bdocs\/[\w.-]+\.(?:md|json|yml)\b/g)].map((m) => m[0])),
    ];
    expect(named.length).toBeGreaterThan(0);
    expect(named.filter((f) => !list.has(f))).toEqual([]);
  });

  it('installs only what the library uses: no CLI package in its production tree', () => {
    const tree = productionTree(bare).filter((name) => name !== pkg.name);
    // The tree is the library's own dependencies and theirs; none of the CLI's.
    for (const dep of Object.keys(cliPkg.dependencies)) expect(tree).not.toContain(dep);
    expect(tree).not.toContain(cliPkg.name);
    for (const dep of Object.keys(pkg.dependencies)) expect(tree).toContain(dep);
    const modules = join(bare, 'node_modules');
    const bytes = sizeOf(modules);
    const own = sizeOf(join(modules, pkg.name));
    console.log(
      `production tree of ${pkg.name}: ${tree.length} packages (${tree.join(', ')}), ` +
        `${(bytes / 1e6).toFixed(2)} MB installed with the library itself ` +
        `(${((bytes - own) / 1e6).toFixed(2)} MB of dependencies); tarball ${(statSync(tarballFile).size / 1e3).toFixed(0)} kB`,
    );
    expect(tree.length).toBeLessThanOrEqual(Object.keys(pkg.dependencies).length + 2);
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

  it('runs the CLI package with no optional peer installed (--help, simulate)', () => {
    const bin = join(cli, 'node_modules', '.bin', 'a2a-ratelimit');
    expect(run(bin, ['--help'], cli)).toMatch(/demo[\s\S]*serve[\s\S]*simulate[\s\S]*probe/);
    const out = run(bin, ['simulate', '--callers', '2', '--clients', 'ours', '--json'], cli);
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
      `${pkg.name}/simulation`,
    ]) {
      const code = `const m = await import(${JSON.stringify(specifier)}); console.log(Object.keys(m).length);`;
      expect(Number(run('node', ['--input-type=module', '-e', code], bare).trim())).toBeGreaterThan(
        0,
      );
    }
  });
});
