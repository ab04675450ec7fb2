import { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import express, { type Request, type Response } from 'express';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fakeIncomingRequest } from '../../testing/fake-incoming-request.js';
import { jsonBodyReader, parseJson } from './json-body.js';

/** A request as Node's HTTP server hands it over: headers known, the body still to be read. */
function request(
  body: Uint8Array,
  headers: Record<string, string> = {},
  splits: readonly number[] = [],
): Request {
  return fakeIncomingRequest({ body, headers, splits }) as unknown as Request;
}

type Read = (req: Request, res: Response, done: (error?: unknown) => void) => void;

/** What a reader made of a request: the body, or whether it refused it as JSON. */
function run(read: Read, req: Request): Promise<{ body: unknown } | { syntax: boolean }> {
  return new Promise((resolve) => {
    read(req, {} as Response, (error?: unknown) => {
      if (error !== undefined && error !== null) resolve({ syntax: error instanceof SyntaxError });
      else resolve({ body: req.body });
    });
  });
}

/** `jsonBodyReader` with a fallback that fails the test if it is used. */
function plainOnly(strict: boolean): Read {
  return jsonBodyReader({
    fallback: () => {
      throw new Error('fell back to express.json()');
    },
    types: ['application/json'],
    limitBytes: 1_000_000,
    strict,
  });
}

const encode = (text: string) => new TextEncoder().encode(text);

describe('jsonBodyReader against express.json() (fast-check)', () => {
  const bodies = fc.oneof(
    fc.json().map(encode),
    fc
      .tuple(
        fc.constantFrom('', '\uFEFF', ' \n\t', '\uFEFF  '),
        fc.json(),
        fc.constantFrom('', ' ', '\n'),
      )
      .map(([before, json, after]) => encode(before + json + after)),
    fc.string({ unit: 'grapheme' }).map(encode),
    fc.constantFrom('', '\uFEFF', '   ', '"text"', '1', 'null', '{', '[]', '{"a":1}x').map(encode),
    fc.uint8Array({ maxLength: 64 }),
    // Bytes that may not be UTF-8 inside a JSON string: replacement characters must agree.
    fc
      .uint8Array({ maxLength: 24 })
      .map(
        (bytes) =>
          new Uint8Array([
            ...encode('{"s":"'),
            ...bytes.filter((b) => b !== 0x22 && b !== 0x5c && b >= 0x20),
            ...encode('"}'),
          ]),
      ),
  );

  it('gives the same body, or refuses as JSON the same bodies, strict and not, in any chunking', async () => {
    await fc.assert(
      fc.asyncProperty(
        bodies,
        fc.boolean(),
        fc.array(fc.nat(80), { maxLength: 4 }),
        async (body, strict, splits) => {
          const ours = await run(plainOnly(strict), request(body, {}, splits));
          const theirs = await run(express.json({ strict }), request(body, {}, splits));
          expect(ours).toEqual(theirs);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe('jsonBodyReader', () => {
  it("leaves a request the SDK parser then skips (Express 5's and 4's), with the body in place", async () => {
    const req = request(encode('{"jsonrpc":"2.0","id":1,"method":"GetTask"}'));
    await run(plainOnly(true), req);
    const again = await run(express.json(), req);
    expect(again).toEqual({ body: { jsonrpc: '2.0', id: 1, method: 'GetTask' } });
    // body-parser 1.x (Express 4) looks only at this mark; under Express 5 no mark is added.
    const major = Number.parseInt(
      (createRequire(import.meta.url)('express/package.json') as { version: string }).version,
      10,
    );
    expect((req as { _body?: boolean })._body).toBe(major < 5 ? true : undefined);
  });

  it('ends with 400 "request aborted" when the request is destroyed mid-body (no hang)', async () => {
    const socket = new Socket();
    Object.defineProperty(socket, 'readable', { value: true });
    const partial = new IncomingMessage(socket) as unknown as Request;
    partial.method = 'POST';
    partial.headers = { 'content-type': 'application/json', 'content-length': '20' };
    partial.push(Buffer.from('{"a":'));
    const outcome = new Promise<unknown>((resolve) =>
      plainOnly(true)(partial, {} as Response, (error?: unknown) => resolve(error)),
    );
    setTimeout(() => partial.destroy(), 5);
    expect(await outcome).toMatchObject({ status: 400, message: 'request aborted' });
    expect(partial.listenerCount('data') + partial.listenerCount('end')).toBe(0);
  });

  it('answers a stream an earlier middleware set an encoding on as express.json() does (500)', async () => {
    const errorOf = (read: Read) =>
      new Promise<unknown>((resolve) => {
        const req = request(encode('{"a":1}'));
        req.setEncoding('utf8');
        read(req, {} as Response, (e?: unknown) => resolve(e));
      });
    const theirs = await errorOf(express.json());
    expect(theirs).toMatchObject({ status: 500, type: 'stream.encoding.set' });
    expect(await errorOf(plainOnly(true))).toMatchObject({
      status: 500,
      type: 'stream.encoding.set',
      message: (theirs as Error).message,
    });
  });

  it('refuses more bytes than Content-Length says with 400, as raw-body does', async () => {
    const req = request(encode('{"a":1}   {}'), { 'content-length': '7' });
    const error = await new Promise<unknown>((resolve) =>
      plainOnly(true)(req, {} as Response, (e?: unknown) => resolve(e)),
    );
    expect(error).toMatchObject({ status: 400, type: 'request.size.invalid' });
  });

  it('falls back to express.json() for everything but the plain case', async () => {
    const cases: [Record<string, string>, number | undefined][] = [
      [{ 'content-type': 'application/json; charset=utf-8' }, 1_000],
      [{ 'content-encoding': 'gzip' }, 1_000],
      [{ 'transfer-encoding': 'chunked' }, 1_000],
      [{}, 5], // over the limit: express.json() answers 413
      [{}, undefined], // a limit given as a string
    ];
    for (const [headers, limitBytes] of cases) {
      let fellBack = 0;
      const read = jsonBodyReader({
        fallback: (_req, _res, next) => {
          fellBack++;
          next();
        },
        types: ['application/json'],
        limitBytes,
        strict: true,
      });
      await run(read, request(encode('{"a":1}'), headers));
      expect(fellBack).toBe(1);
    }
  });

  it('reads a body already parsed by an app-wide express.json() as it stands', async () => {
    const req = request(encode('{"a":1}'));
    await run(express.json(), req);
    let fellBack = 0;
    const read = jsonBodyReader({
      fallback: (r, s, next) => {
        fellBack++;
        express.json()(r, s, next);
      },
      types: ['application/json'],
      limitBytes: 1_000,
      strict: true,
    });
    expect(await run(read, req)).toEqual({ body: { a: 1 } });
    expect(fellBack).toBe(1);
  });
});

describe('parseJson', () => {
  it('drops a byte-order mark, reads an empty body as {}, refuses a bare value when strict', () => {
    expect(parseJson('\uFEFF{"a":1}', { strict: true })).toEqual({ a: 1 });
    expect(parseJson('', { strict: true })).toEqual({});
    expect(() => parseJson(' "text"', { strict: true })).toThrow(SyntaxError);
    expect(parseJson(' "text"', { strict: false })).toBe('text');
  });
});
