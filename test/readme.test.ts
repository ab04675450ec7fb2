/**
 * The README's quick starts compile: each `ts` code block is written out with the package's
 * subpaths mapped to the sources and type-checked with the project's strict settings. The server
 * block gets the three things it says are "your agent as usual" (`card`, `executor`, `app`).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
const dir = join(root, '.tmp', `readme-${process.pid}`);

const SUBPATHS: Record<string, string> = {
  'a2a-ratelimit/server/express': '../../src/server/express.js',
  'a2a-ratelimit/server/grpc': '../../src/server/grpc.js',
  'a2a-ratelimit/server': '../../src/server/index.js',
  'a2a-ratelimit/client/grpc': '../../src/client/grpc.js',
  'a2a-ratelimit/client': '../../src/client/index.js',
};

const YOUR_AGENT = `
import type { AgentCard } from '@a2a-js/sdk';
import type { AgentExecutor } from '@a2a-js/sdk/server';
import express from 'express';
declare const card: AgentCard;
declare const executor: AgentExecutor;
const app = express();
`;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README', () => {
  it('has a server and a client quick start', () => {
    expect(blocks.some((b) => b.includes('createLimiter'))).toBe(true);
    expect(blocks.some((b) => b.includes('createRetryingFetch'))).toBe(true);
  });

  it('quick starts type-check against the sources', () => {
    mkdirSync(dir, { recursive: true });
    const files: string[] = [];
    blocks.forEach((block, i) => {
      let code = block.replace(/from '(a2a-ratelimit[^']*)'/g, (_, spec: string) => {
        const target = SUBPATHS[spec];
        if (target === undefined) throw new Error(`README imports ${spec}: add it to SUBPATHS`);
        return `from '${target}'`;
      });
      if (code.includes('createLimiter')) code = YOUR_AGENT + code;
      const file = join(dir, `block-${i}.ts`);
      writeFileSync(file, `${code}\nexport {};\n`);
      files.push(file);
    });
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../tsconfig.base.json',
        compilerOptions: { noEmit: true, types: ['node'], noUnusedLocals: false },
        files: files.map((f) => f.slice(dir.length + 1)),
      }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      execFileSync('node', [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    } catch (error) {
      throw new Error(
        `README quick start does not compile:\n${(error as { stdout?: string }).stdout ?? ''}`,
      );
    }
  });
});
