/** The result table of `npm run bench:stack`: rows of `measure | docshare | ceiling | ratio`. */

/** A heading row. */
export interface SectionRow { section: string }

export type Row = SectionRow | MeasureRow;

export interface MeasureRow {
  section?: undefined;
  measure: string;
  docshare?: number;
  ceiling?: number;
  unit?: string;
  /** what the ceiling is (shown after its number) */
  ceilingName?: string;
  /** free text instead of numbers */
  docshareText?: string;
  ceilingText?: string;
  ratioText?: string;
}

export const fmt = (value: number | undefined, unit = ''): string => {
  if (value === undefined) return '';
  if (!Number.isFinite(value)) return 'n/a';
  const abs = Math.abs(value);
  const digits = abs >= 100 ? 0 : abs >= 10 ? 1 : 2;
  return `${value.toFixed(digits)}${unit ? ` ${unit}` : ''}`;
};

export const ratioOf = (docshare: number | undefined, ceiling: number | undefined): string => {
  if (docshare === undefined || ceiling === undefined) return '';
  if (!Number.isFinite(docshare) || !Number.isFinite(ceiling) || ceiling === 0) return 'n/a';
  const r = docshare / ceiling;
  return `${r >= 10 ? r.toFixed(0) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)}x`;
};

const cells = (row: MeasureRow): [string, string, string, string] => {
  const docshare = row.docshareText ?? fmt(row.docshare, row.unit);
  const ceiling = row.ceilingText ?? [fmt(row.ceiling, row.unit), row.ceilingName ? `(${row.ceilingName})` : ''].filter(Boolean).join(' ');
  return [row.measure, docshare, ceiling, row.ratioText ?? ratioOf(row.docshare, row.ceiling)];
};

/** A markdown table of text cells, columns padded to their widest cell. */
export const renderGrid = (header: readonly string[], body: readonly (readonly string[])[]): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string => `| ${widths.map((w, i) => (r[i] ?? '').padEnd(w)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
};

/** A markdown table; ratio = docshare ÷ ceiling (for a rate, below 1 is slower; for a latency, above 1 is slower). */
export const renderTable = (rows: readonly Row[]): string =>
  renderGrid(['measure', 'docshare', 'ceiling', 'ratio'], rows.map((row) => (row.section !== undefined ? [`**${row.section}**`, '', '', ''] : cells(row))));

/** The rows as JSON-friendly objects (with the text each cell shows). */
export const rowsJson = (rows: readonly Row[]): object[] => rows.map((row) => {
  if (row.section !== undefined) return { section: row.section };
  const [measure, docshare, ceiling, ratio] = cells(row);
  return {
    measure, docshare, ceiling, ratio,
    values: { docshare: row.docshare ?? null, ceiling: row.ceiling ?? null, unit: row.unit ?? null, ceilingName: row.ceilingName ?? null },
  };
});
