/**
 * A verified fix as the notebook shows and applies it: which one the box offers, its label, the
 * diff the dialog shows, and the edit. The server sends each fix as whole lines of the cell
 * (`startLine` to `endLine`, 0-based, end exclusive) and their new text, the same edit its dry run
 * verified (crane_lsp/fixes/edit.py's `apply`); this module does that edit on the cell's text, so
 * what the dialog shows is what Apply does. Pure: no JupyterLab import, tested with node's runner.
 */

import type { FixRow } from './generated/cellVerdict';
import type { IVerdict } from './guard';

/** The fix the verdict box offers: the server's first (verified ones come first), or none. */
export function topFix(verdict: IVerdict | null | undefined): FixRow | null {
  return verdict && verdict.fixes && verdict.fixes.length ? verdict.fixes[0] : null;
}

/** The fix the run guard may run with: only one that ran clean in the dry run. */
export function verifiedFix(verdict: IVerdict | null | undefined): FixRow | null {
  return (verdict && verdict.fixes && verdict.fixes.find(f => f.verified)) || null;
}

/** "Use 'price' (runs clean in a dry run)": the server's title and status, as every door says them. */
export function fixLabel(fix: FixRow): string {
  return fix.status ? `${fix.title} (${fix.status})` : fix.title;
}

function newLines(fix: FixRow): string[] {
  return fix.newText.replace(/\n+$/, '').split('\n');
}

/** Whether the fix names lines this text has. */
function fits(lines: string[], fix: FixRow): boolean {
  return (
    Number.isInteger(fix.startLine) &&
    Number.isInteger(fix.endLine) &&
    0 <= fix.startLine &&
    fix.startLine < fix.endLine &&
    fix.endLine <= lines.length
  );
}

export interface IFixEdit {
  /** character offsets in the cell's text: replace `from`..`to` with `insert` */
  from: number;
  to: number;
  insert: string;
}

/** The fix as one replacement of the cell's text, or null when the text has no such lines. */
export function fixEdit(text: string, fix: FixRow): IFixEdit | null {
  const lines = text.split('\n');
  if (!fits(lines, fix)) {
    return null;
  }
  let from = 0;
  for (let i = 0; i < fix.startLine; i++) {
    from += lines[i].length + 1;
  }
  let to = from;
  for (let i = fix.startLine; i < fix.endLine; i++) {
    to += lines[i].length + (i + 1 < fix.endLine ? 1 : 0);
  }
  return { from, to, insert: newLines(fix).join('\n') };
}

/** The cell's text with the fix applied (null when it does not fit), as crane_lsp.fixes.edit.apply. */
export function applyFix(text: string, fix: FixRow): string | null {
  const edit = fixEdit(text, fix);
  return edit ? text.slice(0, edit.from) + edit.insert + text.slice(edit.to) : null;
}

export interface IDiffRow {
  kind: '-' | '+';
  /** 1-based, as a person counts: the old line's number for '-', the new one's for '+' */
  line: number;
  text: string;
}

/** The old lines, then the new ones: what the dialog shows before anything changes. */
export function fixDiff(text: string, fix: FixRow): IDiffRow[] {
  const lines = text.split('\n');
  if (!fits(lines, fix)) {
    return [];
  }
  const rows: IDiffRow[] = [];
  for (let i = fix.startLine; i < fix.endLine; i++) {
    rows.push({ kind: '-', line: i + 1, text: lines[i] });
  }
  newLines(fix).forEach((t, i) => rows.push({ kind: '+', line: fix.startLine + i + 1, text: t }));
  return rows;
}
