/**
 * @module ratelimit-headers
 * `RateLimit-Policy` and `RateLimit` (draft-11, `qu` for usage policies): written for our
 * responses, read in every form a server may send, `X-RateLimit-*` included.
 */

import {
  type BareItem,
  type Item,
  parseDictionary,
  parseList,
  serializeItem,
  Token,
} from 'structured-headers';
import type { LimitState } from '../core/rejection.js';
import { type HeaderLookup, type HeadersLike, headerLookup } from './headers-like.js';
import { parseHttpDate } from './retry-after.js';
import type { AnnouncedPolicy, AnnouncedState } from './retry-hint.js';

/** Largest Integer a structured field may carry (15 digits). */
const SF_INTEGER_MAX = 999_999_999_999_999;
/** sf-string: printable ASCII only. */
const SF_STRING = /^[\x20-\x7e]*$/;
/** A unit we write as `qu` without escaping (the policy model's unit names are of this form). */
const UNIT_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
/** The draft's default quota unit: an item without `qu` counts requests. */
const REQUESTS_UNIT = 'requests';
/** A reset above this many seconds is read as a Unix time (seconds), above the next as ms. */
const EPOCH_SECONDS_THRESHOLD = 1e9;
const EPOCH_MS_THRESHOLD = 1e12;

function sfInteger(value: number, round: (n: number) => number): number | undefined {
  if (!Number.isFinite(value)) return undefined;
  return Math.min(SF_INTEGER_MAX, Math.max(0, round(value)));
}

/**
 * `RateLimit-Policy` and `RateLimit` header fields (lower-case names) for the given rate policy
 * states: one list member per policy, `"<name>";q=<limit>;w=<windowSeconds>` and
 * `"<name>";r=<remaining>;t=<resetSeconds>` (r rounded down, t up, both ≥ 0); a usage policy's
 * policy item adds `qu="<unit>"` (its q and r are in that unit). The `rejectedPolicy` item is
 * sent with `r=0`. States with a non-finite number, a window below 1 s,
 * a name that is not printable ASCII or a repeated name are left out. No states → `{}`.
 *
 * @example
 * ```ts
 * rateLimitHeaders([{ policy: 'per-caller', limit: 60, windowSeconds: 60, remaining: 9, resetSeconds: 1 }]);
 * // { 'ratelimit-policy': '"per-caller";q=60;w=60', ratelimit: '"per-caller";r=9;t=1' }
 * ```
 */
export function rateLimitHeaders(
  limits: readonly LimitState[],
  rejectedPolicy?: string,
): Record<string, string> {
  let policies = '';
  let states = '';
  let seen: string[] | undefined;
  for (const state of limits) {
    const name = sfName(state.policy);
    if (name === undefined || seen?.includes(state.policy) === true) continue;
    const q = sfInteger(state.limit, Math.floor);
    const w = sfInteger(state.windowSeconds, Math.ceil);
    const r = state.policy === rejectedPolicy ? 0 : sfInteger(state.remaining, Math.floor);
    const t = sfInteger(state.resetSeconds, Math.ceil);
    if (q === undefined || w === undefined || w < 1 || r === undefined || t === undefined) continue;
    const unit = state.unit;
    if (unit !== undefined && !UNIT_NAME.test(unit)) continue;
    if (seen === undefined) seen = [state.policy];
    else seen.push(state.policy);
    // RFC 9651 §4.1: an item is its bare item then `;key=value` parameters; integers serialize
    // as their decimal digits. The name goes through the structured-fields serializer (cached).
    policies += `${policies === '' ? '' : ', '}${name};q=${q}${unit === undefined ? '' : `;qu="${unit}"`};w=${w}`;
    states += `${states === '' ? '' : ', '}${name};r=${r};t=${t}`;
  }
  if (policies === '') return {};
  return { 'ratelimit-policy': policies, ratelimit: states };
}

/** Serialized sf-string of each policy name seen; policy names are few, the cache is bounded. */
const SF_NAMES = new Map<string, string>();
const SF_NAMES_MAX = 1024;

/** The policy name as an RFC 9651 sf-string, or undefined when it cannot be one. */
function sfName(policy: string): string | undefined {
  const cached = SF_NAMES.get(policy);
  if (cached !== undefined) return cached;
  if (!SF_STRING.test(policy)) return undefined;
  const serialized = serializeItem([policy, new Map()]);
  if (SF_NAMES.size >= SF_NAMES_MAX) SF_NAMES.clear();
  SF_NAMES.set(policy, serialized);
  return serialized;
}

/**
 * Which family of fields a state was read from (`x-ratelimit` ranks below the `RateLimit` forms
 * when choosing a delay).
 */
export type RateLimitForm = 'ratelimit' | 'x-ratelimit';

/**
 * A state as read, with the form it came from; `remaining` may be missing in the legacy forms.
 */
export interface SourcedState {
  readonly form: RateLimitForm;
  readonly policy?: string;
  readonly remaining?: number;
  readonly resetSeconds?: number;
  /** The unit of `remaining` when its policy is announced with a `qu` other than requests. */
  readonly unit?: string;
}

function itemName(value: BareItem): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Token) return value.toString();
  return undefined;
}

function nonNegativeInteger(value: BareItem | undefined): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
}

/** Parses a field as an sf-list; `undefined` when absent or malformed. */
function listOf(text: string | undefined): ReturnType<typeof parseList> | undefined {
  if (text === undefined) return undefined;
  try {
    return parseList(text);
  } catch {
    return undefined;
  }
}

function isItem(member: ReturnType<typeof parseList>[number]): member is Item {
  return !Array.isArray(member[0]);
}

function readPolicies(get: HeaderLookup): AnnouncedPolicy[] {
  const out: AnnouncedPolicy[] = [];
  for (const member of listOf(get('ratelimit-policy')) ?? []) {
    if (!isItem(member)) continue;
    const [value, params] = member;
    const w = nonNegativeInteger(params.get('w'));
    // draft-11: a named item with q; draft-06/07: the quota is the Integer item itself.
    const name = itemName(value);
    const q = name === undefined ? nonNegativeInteger(value) : nonNegativeInteger(params.get('q'));
    if (q === undefined || w === undefined || w === 0) continue;
    const qu = params.get('qu');
    if (qu !== undefined && typeof qu !== 'string' && !(qu instanceof Token)) continue;
    const unit = qu === undefined ? REQUESTS_UNIT : qu.toString();
    out.push({
      policy: name ?? String(q),
      limit: q,
      windowSeconds: w,
      ...(unit === REQUESTS_UNIT ? {} : { unit }),
    });
  }
  return out;
}

function readDraft11States(text: string | undefined): SourcedState[] | undefined {
  const list = listOf(text);
  if (list === undefined) return undefined;
  const out: SourcedState[] = [];
  for (const member of list) {
    if (!isItem(member)) continue;
    const [value, params] = member;
    const policy = itemName(value);
    const remaining = nonNegativeInteger(params.get('r'));
    if (policy === undefined || remaining === undefined) continue;
    const t = nonNegativeInteger(params.get('t'));
    out.push({
      form: 'ratelimit',
      policy,
      remaining,
      ...(t === undefined ? {} : { resetSeconds: t }),
    });
  }
  return out;
}

/**
 * A legacy reset value in seconds from now: delta seconds (integer or decimal), a Unix time in
 * seconds (> 10⁹) or milliseconds (> 10¹²), or an HTTP-date. Times need `nowMs`; a past time is 0.
 *
 * @example
 * ```ts
 * parseResetSeconds('30', 0);                 // 30
 * parseResetSeconds('1700000030', 1_700_000_000_000); // 30
 * ```
 */
export function parseResetSeconds(text: string | undefined, nowMs?: number): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (/^\d{1,20}(\.\d{1,9})?$/.test(trimmed)) {
    const value = Number(trimmed);
    if (!Number.isFinite(value)) return undefined;
    if (value <= EPOCH_SECONDS_THRESHOLD) return value;
    if (nowMs === undefined || !Number.isFinite(nowMs)) return undefined;
    const atMs = value > EPOCH_MS_THRESHOLD ? value : value * 1000;
    return Math.max(0, (atMs - nowMs) / 1000);
  }
  if (nowMs === undefined || !Number.isFinite(nowMs)) return undefined;
  const atMs = parseHttpDate(trimmed);
  return atMs === undefined ? undefined : Math.max(0, (atMs - nowMs) / 1000);
}

function parseCount(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const trimmed = text.trim();
  if (!/^\d{1,15}$/.test(trimmed)) return undefined;
  return Number(trimmed);
}

function legacyState(
  form: RateLimitForm,
  remaining: number | undefined,
  resetSeconds: number | undefined,
): SourcedState[] {
  if (remaining === undefined && resetSeconds === undefined) return [];
  return [
    {
      form,
      ...(remaining === undefined ? {} : { remaining }),
      ...(resetSeconds === undefined ? {} : { resetSeconds }),
    },
  ];
}

function readDraft07State(text: string | undefined, nowMs: number | undefined): SourcedState[] {
  if (text === undefined) return [];
  let dictionary: ReturnType<typeof parseDictionary>;
  try {
    dictionary = parseDictionary(text);
  } catch {
    return [];
  }
  const bare = (key: string): BareItem | undefined => {
    const entry = dictionary.get(key);
    return entry === undefined || Array.isArray(entry[0]) ? undefined : (entry[0] as BareItem);
  };
  const reset = bare('reset');
  return legacyState(
    'ratelimit',
    nonNegativeInteger(bare('remaining')),
    typeof reset === 'number' ? parseResetSeconds(String(reset), nowMs) : undefined,
  );
}

/**
 * Every rate-limit state a response announces, in the order the forms rank: draft-11
 * `RateLimit` items (or, when that field is a draft-07 dictionary, its one state), then
 * `RateLimit-Remaining`/`-Reset`, then `X-RateLimit-*` / `X-Rate-Limit-*`; plus the
 * `RateLimit-Policy` items. Malformed fields are ignored, as the draft requires.
 *
 * @example
 * ```ts
 * readRateLimitFields(headerLookup({ ratelimit: '"a";r=0;t=5' })).states; // [{ form: 'ratelimit', policy: 'a', remaining: 0, resetSeconds: 5 }]
 * ```
 */
export function readRateLimitFields(
  get: HeaderLookup,
  nowMs?: number,
): { policies: AnnouncedPolicy[]; states: SourcedState[] } {
  const combined = get('ratelimit');
  const states = readDraft11States(combined) ?? readDraft07State(combined, nowMs);
  states.push(
    ...legacyState(
      'ratelimit',
      parseCount(get('ratelimit-remaining')),
      parseResetSeconds(get('ratelimit-reset'), nowMs),
    ),
  );
  for (const prefix of ['x-ratelimit', 'x-rate-limit']) {
    states.push(
      ...legacyState(
        'x-ratelimit',
        parseCount(get(`${prefix}-remaining`)),
        parseResetSeconds(get(`${prefix}-reset`), nowMs),
      ),
    );
  }
  const policies = readPolicies(get);
  return { policies, states: withUnits(states, policies) };
}

/** States of a policy announced in another unit than requests, marked with that unit. */
function withUnits(states: SourcedState[], policies: readonly AnnouncedPolicy[]): SourcedState[] {
  if (!policies.some((p) => p.unit !== undefined)) return states;
  return states.map((s) => {
    const unit = policies.find((p) => p.policy === s.policy)?.unit;
    return unit === undefined ? s : { ...s, unit };
  });
}

/**
 * What a (typically successful) response says about the caller's quotas, for pacing: policies
 * from `RateLimit-Policy`, states from every `RateLimit` form (states without a remaining count
 * are left out). Items of a policy counted in another unit (`qu`, e.g. tokens) carry `unit`. Pass `nowMs` to convert legacy resets given as Unix times or HTTP-dates.
 *
 * @example
 * ```ts
 * readRateLimitHeaders(new Headers({ 'RateLimit-Policy': '"p";q=60;w=60', RateLimit: '"p";r=9;t=1' }));
 * // { policies: [{ policy: 'p', limit: 60, windowSeconds: 60 }], states: [{ policy: 'p', remaining: 9, resetSeconds: 1 }] }
 * ```
 */
export function readRateLimitHeaders(
  headers: HeadersLike,
  nowMs?: number,
): { policies: AnnouncedPolicy[]; states: AnnouncedState[] } {
  const { policies, states } = readRateLimitFields(headerLookup(headers), nowMs);
  return { policies, states: announcedStates(states) };
}

/**
 * The public view of sourced states: those with a remaining count, without the form tag.
 *
 * @example
 * ```ts
 * announcedStates([{ form: 'x-ratelimit', remaining: 0, resetSeconds: 3 }]); // [{ remaining: 0, resetSeconds: 3 }]
 * ```
 */
export function announcedStates(states: readonly SourcedState[]): AnnouncedState[] {
  const out: AnnouncedState[] = [];
  for (const { form: _form, remaining, ...rest } of states) {
    if (remaining !== undefined) out.push({ ...rest, remaining });
  }
  return out;
}
