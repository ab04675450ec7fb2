/**
 * @module caller-fingerprint
 * A short, stable, non-reversible key for a credential, so pacers are kept per caller without
 * holding tokens in clear.
 */

/**
 * Fingerprints a credential string (cyrb53); `anonymous` when there is none. Not cryptographic:
 * a collision only makes two callers share a pacer (one may wait for the other), never leaks
 * anything.
 *
 * @example
 * ```ts
 * callerFingerprint('Bearer abc'); // e.g. '2xk9f0q1mz'
 * callerFingerprint(null);         // 'anonymous'
 * ```
 */
export function callerFingerprint(credentials: string | null | undefined): string {
  if (credentials === null || credentials === undefined || credentials === '') return 'anonymous';
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < credentials.length; i++) {
    const c = credentials.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}
