/**
 * "crane: Try cell in sandbox": `crane.previewCell` for the cell under the cursor, run by the server
 * in a jailed copy of the kernel (docs/undo.md, "Preview"); the kernel itself runs nothing. Its answer
 * is shown as a markdown preview: the verdict, what the cell would change, print and show.
 *
 * `crane.previewCell` is a server command: vscode-languageclient registers it when the server declares
 * it, and `Controller.executeCommand` routes it here; a stand-in says so while no server provides it.
 * Pure apart from the injected host: tested without VS Code.
 */
import type { ActiveCell, ExecuteNext } from './controller';

export const PREVIEW_COMMAND = 'crane.previewCell';

/** What the command needs from VS Code (a part of `Host`). */
export interface PreviewHost {
  /** The cell under the cursor: a notebook cell's URI, or a `# %%` file and the cursor line. */
  activeCell(): ActiveCell | undefined;
  openMarkdown(text: string): Promise<void>;
  showInfo(message: string, ...actions: string[]): Promise<string | undefined>;
  showWarning(message: string, ...actions: string[]): Promise<string | undefined>;
}

/** The server's answer: `{stdout, result, diff: [{name, change}], verdict, ...}` or `{error}`. */
export interface PreviewAnswer {
  stdout?: string;
  result?: string;
  diff?: { name: string; change: string }[];
  verdict?: string;
  line?: number;
  stdoutCut?: boolean;
  resultCut?: boolean;
  more?: number;
  note?: string;
  cell?: number;
  error?: string;
}

/** A fenced block that no backtick run in `text` can close early. */
function fenced(text: string): string {
  const runs = text.match(/`+/g) ?? [];
  const fence = '`'.repeat(Math.max(3, ...runs.map((r) => r.length + 1)));
  return `${fence}text\n${text.replace(/\n$/, '')}\n${fence}`;
}

/** The answer as markdown: the verdict line, the changes, the output and the value. */
export function previewMarkdown(answer: unknown): string {
  const a = (answer && typeof answer === 'object' ? answer : {}) as PreviewAnswer;
  const which = typeof a.cell === 'number' ? `cell ${a.cell}` : 'the cell';
  const lines = [`# crane: ${which} tried in a sandbox`, '', 'Run in a jailed copy of the kernel: the kernel itself is unchanged.', ''];
  lines.push(`**Verdict:** ${typeof a.verdict === 'string' ? a.verdict : 'no answer'}`, '');
  const diff = Array.isArray(a.diff) ? a.diff.filter((row) => row && typeof row.change === 'string') : [];
  lines.push('## What it would change', '');
  if (diff.length) lines.push(...diff.map((row) => `- ${row.change}`));
  else lines.push('_no name changed_');
  if (typeof a.more === 'number' && a.more > 0) lines.push(`- and ${a.more} more`);
  lines.push('');
  if (typeof a.stdout === 'string' && a.stdout !== '') {
    lines.push('## What it would print', '', fenced(a.stdout));
    if (a.stdoutCut) lines.push('', '_(cut: the first 20,000 characters)_');
    lines.push('');
  }
  if (typeof a.result === 'string') {
    lines.push('## Its value', '', fenced(a.result));
    if (a.resultCut) lines.push('', '_(cut)_');
    lines.push('');
  }
  if (typeof a.note === 'string') lines.push(`_${a.note}_`, '');
  return lines.join('\n');
}

/**
 * Runs `crane.previewCell` (arguments given by a caller are kept; from the palette, the cell under
 * the cursor) and opens its answer as markdown, or warns with the server's one-line reason.
 */
export async function previewCell(args: unknown[], next: ExecuteNext, host: PreviewHost): Promise<unknown> {
  let forwarded = args;
  if (args.length === 0 || args[0] === undefined || args[0] === null) {
    const cell = host.activeCell();
    if (!cell) {
      void host.showInfo('crane: put the cursor in a notebook cell to try it in the sandbox.');
      return undefined;
    }
    forwarded = [cell.line === undefined ? { uri: cell.uri } : { uri: cell.uri, line: cell.line }];
  }
  const answer = await next(PREVIEW_COMMAND, forwarded);
  if (answer === undefined) return answer; // no server: its stand-in already said so
  if (!answer || typeof answer !== 'object') {
    void host.showWarning('crane: no answer from the server to the preview');
    return answer;
  }
  const error = (answer as PreviewAnswer).error;
  if (typeof error === 'string') {
    void host.showWarning(`crane: cannot try the cell: ${error}`);
    return answer;
  }
  await host.openMarkdown(previewMarkdown(answer));
  return answer;
}
