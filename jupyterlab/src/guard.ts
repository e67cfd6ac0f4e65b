/**
 * The run guard's decision: ask before running a cell only when crane's verdict is for the cell's
 * current text, is a certain or observed crash, and was not ignored. Pure.
 */

export interface IVerdict {
  found?: boolean;
  checked?: boolean;
  stale?: boolean;
  ignored?: boolean;
  crash?: boolean;
  certainty?: string;
  exception?: string | null;
  line?: number | null;
  message?: string;
  diagnosis?: string;
  evidence?: { fact: string; value: string }[];
  origin?: {
    variable: string;
    executionCount?: number | null;
    line?: number | null;
    uri?: string | null;
    index?: number | null;
  }[];
  fix?: string | null;
  source?: string;
  predictionId?: string;
  blockRun?: boolean;
}

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

export function question(verdict: IVerdict): string {
  const exc = verdict.exception || 'an error';
  const where = typeof verdict.line === 'number' ? ` on line ${verdict.line + 1}` : '';
  const how = verdict.certainty === 'observed' ? 'crashed in a sandboxed dry run' : 'will crash';
  return `crane: this cell ${how} with ${exc}${where}: ${verdict.message || ''}`.trim();
}
