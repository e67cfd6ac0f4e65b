/**
 * Undo the last cell in JupyterLab and Notebook 7 (issue 37; docs/undo.md): which cell a real crash
 * left as the kernel's last run, the line its verdict area shows ("Before raising at line 2 the cell
 * mutated `df` in place"), and the one line the server's undo answer reads as. The server does the
 * undo (`crane.undoLastCell`) and says what the cell changed (`crane.cellChanges`); this module only
 * decides and words. Pure: no JupyterLab import, tested with node's runner.
 */

import type { ICellSnapshot } from './protocol';

export const UNDO_COMMAND = 'crane.undoLastCell';
export const CHANGES_COMMAND = 'crane.cellChanges';
export const UNDO_LABEL = 'Undo';
export const UNDO_PALETTE_LABEL = 'crane: Undo last cell';
/** The hover's pointer to the command, which the button replaces here. */
const HOVER_TAIL = /\s*Undo: command crane\.undoLastCell\.?\s*$/;

/** `crane.cellChanges`' answer: what the kernel's last cell changed, and the crash line when it raised. */
export interface ICellChanges {
  bound?: string[];
  rebound?: string[];
  deleted?: string[];
  mutated?: string[];
  text?: string;
  raisedAt?: number;
  line?: string;
  cell?: number;
  executionCount?: number;
  error?: string;
}

/** `crane.undoLastCell`'s answer: `{restored, deleted, kept: [{name, reason}], cell, executionCount}` or `{error}`. */
export interface IUndoAnswer {
  restored?: string[];
  deleted?: string[];
  kept?: { name: string; reason: string }[];
  cell?: number;
  executionCount?: number;
  error?: string;
}

/** The notebook's last run cell when its run raised (the kernel reported an error), else null. */
export interface ICrashedRun {
  cellId: string;
  executionCount: number;
}

/**
 * The code cell with the highest execution count, when its outputs hold an error: the kernel's last
 * cell, the only one an undo applies to. A later clean cell, or a cell still running (no count yet,
 * so an older crash is not the last run once it has one), means none.
 */
export function crashedLastRun(cells: readonly ICellSnapshot[]): ICrashedRun | null {
  let last: ICellSnapshot | null = null;
  for (const cell of cells) {
    if (cell.kind === 'code' && cell.executionOrder !== null && (!last || cell.executionOrder > (last.executionOrder ?? 0))) {
      last = cell;
    }
  }
  if (!last || last.success !== false || last.executionOrder === null) {
    return null;
  }
  return { cellId: last.id, executionCount: last.executionOrder };
}

/** The highest execution count among the cells (0 when none ran): a new run changes it. */
export function lastCount(cells: readonly ICellSnapshot[]): number {
  let count = 0;
  for (const cell of cells) {
    if (cell.kind === 'code' && cell.executionOrder !== null && cell.executionOrder > count) {
      count = cell.executionOrder;
    }
  }
  return count;
}

const names = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((n): n is string => typeof n === 'string') : [];

/** Whether the answer says the run changed a name (else there is nothing for the button to undo). */
export function changedSomething(changes: ICellChanges): boolean {
  return [changes.bound, changes.rebound, changes.deleted, changes.mutated].some(n => names(n).length > 0);
}

/**
 * The crashed cell's line from `crane.cellChanges`: its `line` without the hover's pointer to the
 * command (the button is beside it), or null when the answer has none (no crash of that run, a
 * refusal, another cell's answer).
 */
export function crashLine(changes: ICellChanges | null | undefined, run: ICrashedRun): string | null {
  if (!changes || typeof changes !== 'object' || typeof changes.line !== 'string' || changes.error) {
    return null;
  }
  if (typeof changes.executionCount === 'number' && changes.executionCount !== run.executionCount) {
    return null;
  }
  const line = changes.line.replace(HOVER_TAIL, '').trim();
  return line ? (/[.!?]$/.test(line) ? line : line + '.') : null;
}

const quoted = (list: string[]): string => list.map(n => '`' + n + '`').join(', ');

/**
 * The one line the undo's answer reads as on the cell: "Undone: restored `df`; deleted `tmp`; could
 * not restore `f` (an open file)", or "Not undone: <the server's reason>".
 */
export function answerLine(answer: unknown): { ok: boolean; text: string } {
  if (!answer || typeof answer !== 'object') {
    return { ok: false, text: 'Not undone: no answer from crane-lsp' };
  }
  const a = answer as IUndoAnswer;
  if (typeof a.error === 'string') {
    return { ok: false, text: `Not undone: ${a.error}` };
  }
  const kept = Array.isArray(a.kept)
    ? a.kept.filter(k => k && typeof k.name === 'string').map(k => `\`${k.name}\` (${String(k.reason)})`)
    : [];
  const parts: string[] = [];
  if (names(a.restored).length) {
    parts.push(`restored ${quoted(names(a.restored))}`);
  }
  if (names(a.deleted).length) {
    parts.push(`deleted ${quoted(names(a.deleted))}`);
  }
  if (kept.length) {
    parts.push(`could not restore ${kept.join(', ')}`);
  }
  return { ok: true, text: `Undone: ${parts.length ? parts.join('; ') : 'nothing to put back (the cell changed no name)'}` };
}

/** A line cut at its `backquoted` names: the box shows those as code (always as text, never HTML). */
export function segments(text: string): { text: string; code: boolean }[] {
  const out: { text: string; code: boolean }[] = [];
  const parts = text.split('`');
  if (parts.length % 2 === 0) {
    return [{ text, code: false }]; // an unpaired backquote: the line as it is
  }
  parts.forEach((part, i) => {
    if (part) {
      out.push({ text: part, code: i % 2 === 1 });
    }
  });
  return out;
}
