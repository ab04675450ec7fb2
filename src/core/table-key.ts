/**
 * @module table-key
 * The one table-key encoding of every store: pairs joined injectively, reserved keys (no tenant,
 * overflow), custom keys made well-formed.
 */

/**
 * Prefix of a hashed part (followed by 43 base64url characters): `store/bounded-key.ts` hashes a
 * part that is too long or not well-formed into this shape, and hashes any part that already has
 * it, so a part kept as it is never looks like a hashed one.
 *
 * @example
 * ```ts
 * NO_TENANT_KEY.startsWith(HASHED_KEY_PREFIX); // true: reserved keys use the shape too
 * ```
 */
export const HASHED_KEY_PREFIX = '#sha256:';

/**
 * Length of every hashed part: {@link HASHED_KEY_PREFIX} and 43 base64url characters (256 bits).
 *
 * @example
 * ```ts
 * NO_TENANT_KEY.length === HASHED_KEY_LENGTH; // true
 * ```
 */
export const HASHED_KEY_LENGTH = HASHED_KEY_PREFIX.length + 43;

/**
 * A key no request part can be: a hashed part's shape ({@link HASHED_KEY_LENGTH} characters from
 * {@link HASHED_KEY_PREFIX}) whose tail is not base64url (`(label)` padded with `.`). A kept part
 * never has that shape and a hashed part's tail is base64url, so a reserved key meets neither;
 * nor a custom scope's key ({@link wellFormedKey} escapes those that begin with the prefix).
 *
 * @example
 * ```ts
 * reservedKey('overflow'); // '#sha256:(overflow).................................'
 * ```
 */
export function reservedKey(label: string): string {
  if (!/^[a-z -]{1,41}$/.test(label)) throw new RangeError(`reservedKey: bad label ${label}`);
  return `${HASHED_KEY_PREFIX}${`(${label})`.padEnd(HASHED_KEY_LENGTH - HASHED_KEY_PREFIX.length, '.')}`;
}

/**
 * The tenant part of a request without a tenant: apart from every tenant name, `-` and the empty
 * string included. `reservedKey('no tenant')`, written as a literal so that the engine interns it
 * (a comparison with it is then one pointer comparison); a unit test checks the two agree.
 *
 * @example
 * ```ts
 * NO_TENANT_KEY !== '-' && NO_TENANT_KEY !== ''; // true, and no tenant name gives it
 * ```
 */
export const NO_TENANT_KEY = '#sha256:(no tenant)................................';

/**
 * Two parts as one key, injectively: `<length of first>:<first>/<second>`. The length says where
 * the first part ends, so no character in either part (`/`, `:`, NUL…) can move the boundary:
 * distinct pairs give distinct keys (as UTF-16 strings: `Map` keys; Redis escapes lone
 * surrogates before UTF-8 could merge them).
 *
 * @example
 * ```ts
 * pairKey('a/skill:b', 'c'); // '9:a/skill:b/c'
 * pairKey('a', 'b/skill:c'); // '1:a/b/skill:c'
 * ```
 */
export function pairKey(first: string, second: string): string {
  return `${first.length}:${first}/${second}`;
}

/** `String.prototype.isWellFormed` (ES2024, Node ≥ 20), typed here: the pure lib is ES2023. */
interface WellFormedCheck {
  isWellFormed(): boolean;
}

/**
 * Whether a string has no lone surrogate (so UTF-8 keeps it apart from every other string).
 *
 * @example
 * ```ts
 * isWellFormedKey('x\ud800'); // false
 * ```
 */
export function isWellFormedKey(value: string): boolean {
  return (value as unknown as WellFormedCheck).isWellFormed();
}

/**
 * A custom scope's key as a store keeps it: itself when well-formed and not beginning with
 * {@link HASHED_KEY_PREFIX}, otherwise the prefix, `\`, and the key with `\` doubled and each lone
 * surrogate written `\uXXXX` (lowercase hex). Injective, always well-formed, never a
 * {@link reservedKey}: a key function returning a lone surrogate cannot share a bucket in Redis
 * (where UTF-8 would turn it into U+FFFD) that it does not share in memory.
 *
 * @example
 * ```ts
 * wellFormedKey('eu');       // 'eu'
 * wellFormedKey('x\ud800');  // '#sha256:\\x\\ud800'
 * ```
 */
export function wellFormedKey(key: string): string {
  if (isWellFormedKey(key) && !key.startsWith(HASHED_KEY_PREFIX)) return key;
  return escapeSurrogates(`${HASHED_KEY_PREFIX}\\`, key);
}

/**
 * `mark` followed by `key` with `\` doubled and each lone surrogate written `\uXXXX` (lowercase
 * hex); surrogate pairs are kept. Injective for one mark, and always well-formed.
 *
 * @example
 * ```ts
 * escapeSurrogates('~', 'a\\b\ud800'); // '~a\\\\b\\ud800'
 * ```
 */
export function escapeSurrogates(mark: string, key: string): string {
  let out = mark;
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    if (unit === 0x5c) {
      out += '\\\\';
    } else if (unit >= 0xd800 && unit <= 0xdbff && isLow(key.charCodeAt(i + 1))) {
      out += key.slice(i, i + 2);
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += `\\u${unit.toString(16)}`;
    } else {
      out += key[i];
    }
  }
  return out;
}

/** Whether a code unit is a low surrogate (NaN, past the end, is not). */
function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}
