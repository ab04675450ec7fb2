import { describe, expect, it } from 'vitest';
import { createApiKeyTable, loadApiKeysFile, mergeApiKeys } from './api-key-table.js';
import { sha256HexOf } from './identity-config.js';

const ALICE = 'ak_alice_0123456789abcdef';
const BOB = 'ak_bob_fedcba9876543210';

/** A reader over an in-memory file system that counts its reads. */
function files(contents: Record<string, string>): {
  read: (path: string) => Promise<string>;
  reads: string[];
} {
  const reads: string[] = [];
  return {
    reads,
    read: async (path) => {
      reads.push(path);
      const text = contents[path];
      if (text === undefined) {
        throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
      }
      return text;
    },
  };
}

describe('createApiKeyTable', () => {
  const table = createApiKeyTable([
    { key: ALICE, caller: 'alice', tier: 'gold' },
    { sha256: sha256HexOf(BOB), caller: 'bob' },
  ]);

  it('finds a clear key and a hashed key, with their tier', () => {
    expect(table.size).toBe(2);
    expect(table.find(ALICE)).toEqual({ caller: 'alice', tier: 'gold' });
    expect(table.find(BOB)).toEqual({ caller: 'bob' });
  });

  it('matches whole keys only: no prefix, extension, case or last-character variant', () => {
    expect(table.find(ALICE.slice(0, -1))).toBeUndefined();
    expect(table.find(`${ALICE}0`)).toBeUndefined();
    expect(table.find(`${ALICE.slice(0, -1)}g`)).toBeUndefined();
    expect(table.find(ALICE.toUpperCase())).toBeUndefined();
    expect(table.find('')).toBeUndefined();
    expect(table.find(' '.repeat(10_000))).toBeUndefined();
  });

  it('compares digests, so presenting the stored digest itself is no key', () => {
    expect(table.find(sha256HexOf(BOB))).toBeUndefined();
    expect(table.find(sha256HexOf(ALICE))).toBeUndefined();
  });

  it('hashes UTF-8 bytes, so keys differing only beyond ASCII stay apart', () => {
    const t = createApiKeyTable([{ key: 'ключ-0123456789abcdef', caller: 'c' }]);
    expect(t.find('ключ-0123456789abcdef')).toEqual({ caller: 'c' });
    expect(t.find('ключ-0123456789abcdeF')).toBeUndefined();
  });
});

describe('loadApiKeysFile', () => {
  it('reads a YAML list', async () => {
    const fs = files({
      '/k.yaml': `- key: ${ALICE}\n  caller: alice\n  tier: gold\n- sha256: ${sha256HexOf(BOB)}\n  caller: bob\n`,
    });
    const entries = await loadApiKeysFile('/k.yaml', fs.read);
    expect(entries).toEqual([
      { key: ALICE, caller: 'alice', tier: 'gold' },
      { sha256: sha256HexOf(BOB), caller: 'bob' },
    ]);
    expect(fs.reads).toEqual(['/k.yaml']);
  });

  it('reads JSON with the list under apiKeys, and reads again on each call', async () => {
    const contents = { '/k.json': JSON.stringify({ apiKeys: [{ key: ALICE, caller: 'alice' }] }) };
    const fs = files(contents);
    expect(await loadApiKeysFile('/k.json', fs.read)).toEqual([{ key: ALICE, caller: 'alice' }]);
    contents['/k.json'] = JSON.stringify([{ key: BOB, caller: 'bob' }]);
    expect(await loadApiKeysFile('/k.json', fs.read)).toEqual([{ key: BOB, caller: 'bob' }]);
    expect(fs.reads).toHaveLength(2);
  });

  it('names the file and the bad field', async () => {
    const fs = files({
      '/a.yaml': `- key: ${ALICE}\n  caller: a\n- sha256: nothex\n  caller: b\n`,
      '/b.json': JSON.stringify({ apiKeys: [{ key: ALICE, caller: 'a', color: 'red' }] }),
      '/c.yaml': 'key: [unclosed',
    });
    await expect(loadApiKeysFile('/a.yaml', fs.read)).rejects.toThrow(
      '/a.yaml: [1].sha256: must be 64 hex characters',
    );
    await expect(loadApiKeysFile('/b.json', fs.read)).rejects.toThrow(
      '/b.json: apiKeys[0]: unknown field "color"',
    );
    await expect(loadApiKeysFile('/c.yaml', fs.read)).rejects.toThrow(
      /^\/c\.yaml: not valid YAML or JSON/,
    );
    await expect(loadApiKeysFile('/missing.yaml', fs.read)).rejects.toThrow(
      'cannot read API keys file /missing.yaml: no such file',
    );
  });

  it('refuses a key listed twice without echoing it', async () => {
    const fs = files({
      '/d.yaml': `- key: ${ALICE}\n  caller: a\n- sha256: ${sha256HexOf(ALICE)}\n  caller: b\n`,
    });
    const error = await loadApiKeysFile('/d.yaml', fs.read).catch((e: Error) => e);
    expect((error as Error).message).toBe('/d.yaml: [1]: the same key as [0]');
    expect((error as Error).message).not.toContain(ALICE);
  });
});

describe('mergeApiKeys', () => {
  it('joins both lists and refuses a key in both', () => {
    expect(
      mergeApiKeys([{ key: ALICE, caller: 'a' }], [{ key: BOB, caller: 'b' }], 'identity'),
    ).toHaveLength(2);
    expect(() =>
      mergeApiKeys(
        [
          { key: BOB, caller: 'b' },
          { key: ALICE, caller: 'a' },
        ],
        [{ sha256: sha256HexOf(ALICE), caller: 'x' }],
        'identity',
      ),
    ).toThrow('identity.apiKeysFile[0]: the same key as identity.apiKeys[1]');
  });
});
