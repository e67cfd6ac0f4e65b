/**
 * The run guard's decision: ask before running a cell only when crane's verdict is for the cell's
 * current text, is a certain or observed crash, and was not ignored. Pure.
 */

import { RUN_ANYWAY, type CellVerdictAnswer } from './generated/cellVerdict';

/** The server's `crane.cellVerdict` answer, typed by the interface generated from the server's model. */
export type IVerdict = Partial<CellVerdictAnswer>;

/** Whether running `currentText` deserves a question; `verdictText` is the text the verdict was for. */
export function shouldAsk(verdict: IVerdict | null | undefined, verdictText: string | undefined, currentText: string): boolean {
  if (!verdict || !verdict.blockRun || verdict.stale || verdict.ignored) {
    return false;
  }
  if (verdict.certainty !== 'certain' && verdict.certainty !== 'observed') {
    return false;
  }
  return verdictText === currentText;
}

/** The server's question ("crane: this cell raises KeyError at line 2 (...). Run anyway?"): its words, not ours. */
export function question(verdict: IVerdict): string {
  return verdict.question || `crane: this cell ${verdict.label || 'will crash'}. ${RUN_ANYWAY}?`;
}
