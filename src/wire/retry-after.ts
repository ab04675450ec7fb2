/**
 * @module retry-after
 * `Retry-After` (RFC 9110): delta-seconds or an HTTP-date in any of its three formats.
 */

const MONTHS: Readonly<Record<string, number>> = {
  jan: 0,
  feb: 1,
  mar: 2,
  apr: 3,
  may: 4,
  jun: 5,
  jul: 6,
  aug: 7,
  sep: 8,
  oct: 9,
  nov: 10,
  dec: 11,
};

const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
/** `Sun, 06 Nov 1994 08:49:37 GMT` */
const IMF_FIXDATE = new RegExp(`^[a-z]{3}, (\\d{2}) ([a-z]{3}) (\\d{4}) ${TIME} GMT$`, 'i');
/** `Sunday, 06-Nov-94 08:49:37 GMT` */
const RFC850_DATE = new RegExp(`^[a-z]{6,9}, (\\d{2})-([a-z]{3})-(\\d{2}) ${TIME} GMT$`, 'i');
/** `Sun Nov  6 08:49:37 1994` */
const ASCTIME_DATE = new RegExp(`^[a-z]{3} ([a-z]{3}) ([ \\d]\\d) ${TIME} (\\d{4})$`, 'i');

const DELTA_SECONDS = /^\d+$/;
const MS_PER_YEAR_50 = 50 * 365.2425 * 86_400_000;

function utcMs(
  year: number,
  monthName: string,
  day: string,
  hh: string,
  mm: string,
  ss: string,
): number | undefined {
  const month = MONTHS[monthName.toLowerCase()];
  if (month === undefined) return undefined;
  const d = Number(day.trim());
  const h = Number(hh);
  const m = Number(mm);
  // A leap second (60) is read as 59.
  const s = Math.min(Number(ss), 59);
  if (h > 23 || m > 59 || Number(ss) > 60) return undefined;
  const ms = Date.UTC(year, month, d, h, m, s);
  // Reject days that roll over into the next month (e.g. 31 Feb), and years Date.UTC remaps (< 100).
  const date = new Date(ms);
  return date.getUTCDate() === d && date.getUTCFullYear() === year ? ms : undefined;
}

/**
 * RFC 850's two-digit year: the most recent year with those digits that is not more than 50
 * years in the future of `nowMs` (RFC 9110 §5.6.7); 70–99 → 19xx otherwise when no clock is given.
 */
function rfc850Year(twoDigits: number, nowMs: number | undefined): number {
  if (nowMs === undefined || !Number.isFinite(nowMs)) {
    return twoDigits >= 70 ? 1900 + twoDigits : 2000 + twoDigits;
  }
  const nowYear = new Date(nowMs).getUTCFullYear();
  let year = nowYear - (nowYear % 100) + twoDigits;
  if (Date.UTC(year, 0, 1) - nowMs > MS_PER_YEAR_50) year -= 100;
  return year;
}

/**
 * Parses an HTTP-date (IMF-fixdate, RFC 850 or asctime) to Unix milliseconds; `undefined` when the
 * text is none of them. `nowMs` only resolves RFC 850's two-digit year.
 *
 * @example
 * ```ts
 * parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT');  // 784111777000
 * parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'); // 784111777000
 * parseHttpDate('Sun Nov  6 08:49:37 1994');       // 784111777000
 * ```
 */
export function parseHttpDate(text: string, nowMs?: number): number | undefined {
  const value = text.trim();
  let m = IMF_FIXDATE.exec(value);
  if (m !== null) {
    const [, day = '', month = '', year = '', hh = '', mm = '', ss = ''] = m;
    return utcMs(Number(year), month, day, hh, mm, ss);
  }
  m = RFC850_DATE.exec(value);
  if (m !== null) {
    const [, day = '', month = '', year = '', hh = '', mm = '', ss = ''] = m;
    return utcMs(rfc850Year(Number(year), nowMs), month, day, hh, mm, ss);
  }
  m = ASCTIME_DATE.exec(value);
  if (m !== null) {
    const [, month = '', day = '', hh = '', mm = '', ss = '', year = ''] = m;
    return utcMs(Number(year), month, day, hh, mm, ss);
  }
  return undefined;
}

/**
 * A `Retry-After` value as a delay in milliseconds from `nowMs`: delta-seconds × 1000, or the
 * time until an HTTP-date (0 when it is in the past). `undefined` for anything malformed, so the
 * result is always finite and ≥ 0. A field repeated by an intermediary (`"12, 12"`) is read by
 * its first member.
 *
 * @example
 * ```ts
 * parseRetryAfter('12', 0);                                   // 12000
 * parseRetryAfter('Thu, 01 Jan 1970 00:00:10 GMT', 4_000);    // 6000
 * parseRetryAfter('soon', 0);                                 // undefined
 * ```
 */
export function parseRetryAfter(text: string | undefined, nowMs: number): number | undefined {
  if (text === undefined) return undefined;
  const value = text.trim();
  if (DELTA_SECONDS.test(value)) {
    const ms = Number(value) * 1000;
    return Number.isFinite(ms) ? ms : undefined;
  }
  if (!Number.isFinite(nowMs)) return undefined;
  const atMs = parseHttpDate(value, nowMs);
  if (atMs !== undefined) return Math.max(0, atMs - nowMs);
  const first = /^(\d+)\s*,/.exec(value)?.[1];
  return first === undefined ? undefined : parseRetryAfter(first, nowMs);
}
