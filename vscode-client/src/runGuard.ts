/**
 * The run guard (setting `crane.runGuard`, off by default): Shift+Enter, Ctrl+Enter and Alt+Enter on a
 * notebook code cell first ask the server for the cell's verdict (`crane.cellVerdict`, the same
 * decision JupyterLab's guard uses) and, only when it says `blockRun` for the cell's current text,
 * ask the user before running it. No server, no verdict, a verdict for another text, a slow answer:
 * the cell runs as if crane were not there. Pure: VS Code comes in through `GuardHost` (host.ts).
 */

import { RUN_ANYWAY, RUN_WITH_FIX, SHOW, type CellVerdictAnswer, type FixRow } from './generated/cellVerdict';

export { RUN_ANYWAY, RUN_WITH_FIX, SHOW };
export type { FixRow };
/** How long a run waits for the verdict before it goes ahead without one. */
export const VERDICT_TIMEOUT_MS = 1500;

/** The built-in notebook commands the guard stands in front of (their keys: Ctrl+Enter, Shift+Enter, Alt+Enter). */
export const RUN_COMMANDS = {
  execute: 'notebook.cell.execute',
  executeAndSelectBelow: 'notebook.cell.executeAndSelectBelow',
  executeAndInsertBelow: 'notebook.cell.executeAndInsertBelow',
} as const;
export type RunKind = keyof typeof RUN_COMMANDS;

/** The server's `crane.cellVerdict` answer, typed by the interface generated from the server's model. */
export type CellVerdict = Partial<CellVerdictAnswer>;

export const CELL_VERDICT_COMMAND = 'crane.cellVerdict';

/** The one argument of `crane.cellVerdict`: the cell (by its URI) and its text as the editor shows it. */
export function cellVerdictArgument(uri: string, text: string): { uri: string; cell: string; text: string } {
  return { uri, cell: uri, text };
}

export interface GuardCell {
  uri: string;
  text: string;
}

export interface GuardHost {
  enabled(): boolean;
  /**
   * The code cells the run would execute: `target`'s (the cell whose run menu was used), else the
   * notebook editor's selection; undefined: not a notebook.
   */
  selectedCells(target?: unknown): GuardCell[] | undefined;
  /** `crane.cellVerdict` for the cell's current text; undefined when there is no answer (in time). */
  verdict(cell: GuardCell): Promise<CellVerdict | undefined>;
  /** A modal question; resolves to the button chosen, undefined for Cancel/Escape. */
  ask(message: string, ...buttons: string[]): Promise<string | undefined>;
  /**
   * Replaces lines `fix.startLine` to `fix.endLine` (0-based, end exclusive) of the cell with
   * `fix.newText`, as one undoable edit, only while the cell's text is still `cell.text`; false when
   * it was not applied.
   */
  applyFix(cell: GuardCell, fix: FixRow): Promise<boolean>;
  /** Reveals the cell and the crane diagnostic on `line` (0-based). */
  show(cell: GuardCell, line: number): Promise<void>;
  /** Runs the built-in notebook command (on `target`'s cell when given). */
  run(command: string, target?: unknown): Promise<unknown>;
  log(line: string): void;
}

export type GuardOutcome = 'ran' | 'ranAnyway' | 'ranWithFix' | 'cancelled' | 'shown';

export function isKind(value: unknown): value is RunKind {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(RUN_COMMANDS, value);
}

/** Whether the verdict holds the run: a certain or observed crash, for this very text, not ignored. */
export function blocks(verdict: CellVerdict | undefined): boolean {
  if (!verdict || !verdict.blockRun || !verdict.crash || verdict.stale || verdict.ignored) return false;
  return verdict.certainty === 'certain' || verdict.certainty === 'observed';
}

/** The server's question ("crane: this cell raises KeyError at line 2 (...). Run anyway?"): its words, not ours. */
export function question(verdict: CellVerdict): string {
  return verdict.question || `crane: this cell ${verdict.label || 'will crash'}. ${RUN_ANYWAY}?`;
}

/** The fix the guard may run with: the first that ran clean in the dry run (a gets-further one never). */
export function verifiedFix(verdict: CellVerdict | undefined): FixRow | undefined {
  return verdict?.fixes?.find((fix) => fix.verified);
}

/** The lines a fix replaces, as the server verified the edit (crane_lsp/fixes/edit.py), or undefined. */
export function fixLines(text: string, fix: FixRow): { old: string[]; new: string[] } | undefined {
  const lines = text.split('\n');
  const { startLine: start, endLine: end } = fix;
  if (!Number.isInteger(start) || !Number.isInteger(end) || start < 0 || end <= start || end > lines.length) return undefined;
  return { old: lines.slice(start, end), new: fix.newText.replace(/\n+$/, '').split('\n') };
}

/** The question, then the fix and its diff (old lines, new lines, numbered as a person counts). */
export function questionWithFix(verdict: CellVerdict, text: string, fix: FixRow): string {
  const lines = fixLines(text, fix);
  const parts = [question(verdict), '', `${RUN_WITH_FIX}: ${fix.title} (${fix.status})`];
  lines?.old.forEach((line, i) => parts.push(`- ${fix.startLine + i + 1} | ${line}`));
  lines?.new.forEach((line, i) => parts.push(`+ ${fix.startLine + i + 1} | ${line}`));
  return parts.join('\n');
}

/** The guarded run: ask about the first selected cell that will crash, else run at once. */
export async function guardedRun(host: GuardHost, kind: RunKind, target?: unknown): Promise<GuardOutcome> {
  const command = RUN_COMMANDS[kind];
  const cells = host.enabled() ? host.selectedCells(target) : undefined;
  for (const cell of cells ?? []) {
    let verdict: CellVerdict | undefined;
    try {
      verdict = await host.verdict(cell);
    } catch (error) {
      host.log(`Run guard: no verdict for ${cell.uri} (${String(error)}); running.`);
      continue;
    }
    if (!verdict || !blocks(verdict)) continue;
    const fix = verifiedFix(verdict);
    const answer = fix
      ? await host.ask(questionWithFix(verdict, cell.text, fix), RUN_WITH_FIX, RUN_ANYWAY, SHOW)
      : await host.ask(question(verdict), RUN_ANYWAY, SHOW);
    if (fix && answer === RUN_WITH_FIX) {
      if (!(await host.applyFix(cell, fix))) {
        host.log(`Run guard: ${cell.uri} changed before the fix could be applied; not run.`);
        return 'cancelled';
      }
      host.log(`Run guard: ${cell.uri} run with the fix (${fix.title}).`);
      await host.run(command, target);
      return 'ranWithFix';
    }
    if (answer === RUN_ANYWAY) {
      host.log(`Run guard: ${cell.uri} run anyway (${verdict.exception ?? 'crash'}).`);
      await host.run(command, target);
      return 'ranAnyway';
    }
    if (answer === SHOW) {
      await host.show(cell, typeof verdict.line === 'number' ? verdict.line : 0);
      return 'shown';
    }
    return 'cancelled';
  }
  await host.run(command, target);
  return 'ran';
}

/** Resolves to undefined after `ms` unless `work` settles first (a late answer is dropped). */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
