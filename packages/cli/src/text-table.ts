/**
 * @module text-table
 * A plain-text table for terminal output: columns padded to their widest cell, numbers
 * right-aligned.
 */

/**
 * One cell: text, or a number (right-aligned).
 */
export type TableCell = string | number;

/**
 * Renders rows under headers, one line each, with a trailing newline.
 *
 * @example
 * ```ts
 * renderTable(['', 'ours'], [['admitted at once', 10]]);
 * // "                  ours\n----------------  ----\nadmitted at once    10\n"
 * ```
 */
export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly TableCell[])[],
): string {
  const columns = headers.length;
  const widths = headers.map((h, c) =>
    Math.max(h.length, ...rows.map((row) => String(row[c] ?? '').length)),
  );
  const numeric = headers.map((_, c) => rows.some((row) => typeof row[c] === 'number'));
  const line = (cells: readonly TableCell[]): string =>
    Array.from({ length: columns }, (_, c) => {
      const text = String(cells[c] ?? '');
      const width = widths[c] ?? 0;
      return numeric[c] === true ? text.padStart(width) : text.padEnd(width);
    })
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return `${[line(headers), rule, ...rows.map(line)].join('\n')}\n`;
}
