/**
 * LSP diagnostics of one cell as CodeMirror 6 lint diagnostics (document offsets). Pure.
 *
 * LSP positions count UTF-16 code units per line, exactly as JavaScript strings and CodeMirror do, so
 * a column maps to an offset by adding line starts; anything out of range is clamped into the cell,
 * so a mark never lands outside its cell (or throws) when the text moved on meanwhile.
 */

export interface ILspPosition {
  line: number;
  character: number;
}

export interface ILspDiagnostic {
  range: { start: ILspPosition; end: ILspPosition };
  message: string;
  severity?: number;
  source?: string;
  code?: string | number;
  data?: any;
}

export interface IMark {
  from: number;
  to: number;
  severity: 'error' | 'warning' | 'info' | 'hint';
  message: string;
  source: string;
  markClass: string;
}

export const STALE_PREFIX = '(stale) ';

export function offsetAt(text: string, pos: ILspPosition): number {
  const lines = text.split('\n');
  const line = Math.max(0, Math.min(pos.line, lines.length - 1));
  let offset = 0;
  for (let i = 0; i < line; i++) {
    offset += lines[i].length + 1;
  }
  return offset + Math.max(0, Math.min(pos.character, lines[line].length));
}

function severityName(severity: number | undefined): IMark['severity'] {
  switch (severity) {
    case 2:
      return 'warning';
    case 3:
      return 'info';
    case 4:
      return 'hint';
    default:
      return 'error';
  }
}

export function isStale(d: ILspDiagnostic): boolean {
  return Boolean(d.data && d.data.stale) || d.message.startsWith(STALE_PREFIX);
}

/** crane's diagnostics (source `crane`) for `text` as lint marks; an empty range widens to its line's end. */
export function toMarks(text: string, diagnostics: ILspDiagnostic[]): IMark[] {
  const marks: IMark[] = [];
  for (const d of diagnostics) {
    if (d.source !== undefined && d.source !== 'crane') {
      continue;
    }
    let from = offsetAt(text, d.range.start);
    let to = offsetAt(text, d.range.end);
    if (to < from) {
      [from, to] = [to, from];
    }
    if (to === from) {
      const lineEnd = text.indexOf('\n', from);
      to = lineEnd === -1 ? text.length : lineEnd;
      if (to === from && from > 0) {
        from -= 1;
      }
    }
    const stale = isStale(d);
    marks.push({
      from,
      to,
      severity: severityName(d.severity),
      message: d.message,
      source: 'crane',
      markClass: stale ? 'crane-mark crane-mark-stale' : 'crane-mark'
    });
  }
  return marks;
}
