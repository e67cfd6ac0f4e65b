/**
 * "crane: Try cell in sandbox" in JupyterLab and Notebook 7 (issue 37; docs/undo.md, "Preview"): which
 * code cell the server is asked about, and what its `crane.previewCell` answer reads as in the box
 * under the cell (the verdict, the changes in words, what it prints, its value) or the one line of a
 * refusal. The server runs the cell in a jailed copy of the kernel; this module only decides and words.
 * Pure: no JupyterLab import, tested with node's runner.
 */

import type { ICellSnapshot } from './protocol';

export const PREVIEW_COMMAND = 'crane.previewCell';
export const PREVIEW_LABEL = 'crane: Try cell in sandbox';
export const PREVIEW_CAPTION =
  'Run the active cell in a jailed copy of the kernel and show what it would print, show and change (the kernel runs nothing)';
export const PREVIEW_PENDING = 'Trying the cell in a sandbox…';
export const PREVIEW_CHANGED = 'Not shown: the cell was edited while it was tried';
/** the box's headings, in its order */
export const HEADINGS = { changes: 'What it would change', stdout: 'What it would print', result: 'Its value' };

/** `crane.previewCell`'s answer: `{stdout, result, diff: [{name, change}], verdict, ...}` or `{error}`. */
export interface IPreviewAnswer {
  stdout?: string;
  result?: string;
  diff?: { name: string; change: string }[];
  verdict?: string;
  outcome?: string;
  line?: number;
  cell?: number;
  stdoutCut?: boolean;
  resultCut?: boolean;
  more?: number;
  note?: string;
  error?: string;
}

/** What the box shows: an answer's parts, or one line saying why there is none. */
export type PreviewView =
  | { ok: false; text: string }
  | {
      ok: true;
      /** "Tried in a sandbox (the kernel is unchanged): ran clean" */
      head: string;
      /** crashed, or no verdict: the box is marked so */
      clean: boolean;
      /** "adds column `ratio` to `df`", ..., "and 3 more"; "no name changed" when none */
      changes: string[];
      stdout: string | null;
      stdoutNote: string | null;
      result: string | null;
      resultNote: string | null;
      note: string | null;
    };

/** The cell's place among the notebook's code cells, 1-based (the server's `cell`), or null. */
export function codePosition(cells: readonly ICellSnapshot[], cellId: string): number | null {
  let n = 0;
  for (const cell of cells) {
    if (cell.kind === 'code') {
      n += 1;
      if (cell.id === cellId) {
        return n;
      }
    }
  }
  return null;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The answer as the box shows it; anything malformed or a refusal is one line. */
export function previewView(answer: unknown): PreviewView {
  if (!answer || typeof answer !== 'object') {
    return { ok: false, text: 'Not tried: no answer from crane-lsp' };
  }
  const a = answer as IPreviewAnswer;
  if (typeof a.error === 'string') {
    return { ok: false, text: `Not tried: ${a.error.split('\n')[0]}` };
  }
  const verdict = text(a.verdict) || 'no verdict';
  const changes = Array.isArray(a.diff)
    ? a.diff.filter(row => row && typeof row.change === 'string').map(row => row.change)
    : [];
  if (typeof a.more === 'number' && a.more > 0) {
    changes.push(`and ${a.more} more`);
  }
  const stdout = text(a.stdout);
  const result = text(a.result);
  return {
    ok: true,
    head: `Tried in a sandbox (the kernel is unchanged): ${verdict}`,
    clean: verdict === 'ran clean',
    changes: changes.length ? changes : ['no name changed'],
    stdout: stdout ? stdout.replace(/\n$/, '') : null,
    stdoutNote: stdout && a.stdoutCut ? '(cut: the first 20,000 characters)' : null,
    result,
    resultNote: result !== null && a.resultCut ? '(cut)' : null,
    note: text(a.note)
  };
}

/** The answer's cell, when it names one, is the one asked about (else the answer is another's). */
export function answersCell(answer: unknown, position: number): boolean {
  const cell = answer && typeof answer === 'object' ? (answer as IPreviewAnswer).cell : undefined;
  return typeof cell !== 'number' || cell === position;
}
