import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { compilePolicies } from 'a2a-ratelimit';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { parsePolicyConfig } from './policy-config.js';

const CLI_DOC = fileURLToPath(new URL('../../../docs/cli.md', import.meta.url));

describe('policy config with tiers, budgets, shadow and exemptions', () => {
  it('accepts the documented example and compiles it', () => {
    const blocks = [...readFileSync(CLI_DOC, 'utf8').matchAll(/```yaml\n([\s\S]*?)```/g)];
    const example = blocks.map((b) => b[1] ?? '').find((b) => b.includes('unit: tokens'));
    expect(example).toBeDefined();
    const config = parsePolicyConfig(parse(example as string), 'cli.md');
    const set = compilePolicies(config.policies);
    const [tiered, tokens, trial] = set.policies;
    expect(tiered?.kind === 'rate' && tiered.tierVariants.map((v) => [v.tier, v.burst])).toEqual([
      ['free', 10],
      ['pro', 100],
    ]);
    expect(tokens?.kind === 'rate' && tokens.unit).toBe('tokens');
    expect(trial?.shadow).toBe(true);
    expect(tiered?.keyOf({ caller: 'health-checker', method: 'SendMessage' })).toBeUndefined();
  });

  it('names a bad tier field', () => {
    expect(() =>
      parsePolicyConfig(
        {
          policies: [
            {
              name: 'p',
              kind: 'rate',
              defaultTier: 'a',
              tiers: { a: { limit: 0, windowSeconds: 1 } },
            },
          ],
        },
        'x.yaml',
      ),
    ).toThrow(/x\.yaml: policies\[0\]\.tiers\.a\.limit: must be a positive integer/);
  });
});

describe('config errors list every problem', () => {
  it('problems across policies are all named, each once', () => {
    expect(() =>
      parsePolicyConfig(
        {
          policies: [
            { name: 'a', kind: 'rate', limit: 0, windowSeconds: 60 },
            { name: '', kind: 'concurrency' },
          ],
        },
        'set.json',
      ),
    ).toThrow(
      'set.json: 3 problems: policies[0].limit: must be a positive integer; policies[1].name: must be a non-empty string; policies[1].max: is required',
    );
  });
});
