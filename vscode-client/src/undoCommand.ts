/**
 * "crane: Undo last cell": `crane.undoLastCell` with `{uri}` of the active notebook (or `# %%` file),
 * its answer shown as one message (docs/undo.md). The server does the undo; this only says which
 * document and what came back.
 *
 * `crane.undoLastCell` is a server command: vscode-languageclient registers it in VS Code when the
 * server declares it, and `Controller.executeCommand` routes it here (`middleware.executeCommand`).
 * Pure apart from the injected host: tested without VS Code.
 */
import type { ExecuteNext } from './controller';

export const UNDO_COMMAND = 'crane.undoLastCell';

/** What the command needs from VS Code (a part of `Host`). */
export interface UndoHost {
  /** The active notebook's URI, or the active Python file's (`# %%` cells). */
  activeDocumentUri(): string | undefined;
  showInfo(message: string, ...actions: string[]): Promise<string | undefined>;
  showWarning(message: string, ...actions: string[]): Promise<string | undefined>;
}

/** The server's answer: `{restored, deleted, kept: [{name, reason}], cell, executionCount}` or `{error}`. */
export interface UndoAnswer {
  restored?: string[];
  deleted?: string[];
  kept?: { name: string; reason: string }[];
  cell?: number;
  executionCount?: number;
  error?: string;
}

const names = (value: unknown): string[] => (Array.isArray(value) ? value.filter((n): n is string => typeof n === 'string') : []);

/**
 * The one message an answer reads as: "Restored df, model; deleted tmp; kept f (an open file)", or
 * the server's one-line reason when it did nothing.
 */
export function undoMessage(answer: unknown): { ok: boolean; text: string } {
  if (!answer || typeof answer !== 'object') return { ok: false, text: 'crane: no answer from the server to the undo' };
  const a = answer as UndoAnswer;
  if (typeof a.error === 'string') return { ok: false, text: `crane: ${a.error}` };
  const kept = Array.isArray(a.kept)
    ? a.kept.filter((k) => k && typeof k.name === 'string').map((k) => `${k.name} (${String(k.reason)})`)
    : [];
  const parts = [
    ...(names(a.restored).length ? [`restored ${names(a.restored).join(', ')}`] : []),
    ...(names(a.deleted).length ? [`deleted ${names(a.deleted).join(', ')}`] : []),
    ...(kept.length ? [`kept ${kept.join(', ')}`] : []),
  ];
  const body = parts.length ? parts.join('; ') : 'nothing to put back (the cell changed no name)';
  const which = typeof a.cell === 'number' ? `cell ${a.cell} undone. ` : '';
  return { ok: true, text: `crane: ${which}${body[0].toUpperCase()}${body.slice(1)}` };
}

/**
 * Runs `crane.undoLastCell` (arguments given by a caller are kept; from the palette, the active
 * notebook) and shows its answer: an information message, or a warning with the reason.
 */
export async function undoLastCell(args: unknown[], next: ExecuteNext, host: UndoHost): Promise<unknown> {
  let forwarded = args;
  if (args.length === 0 || args[0] === undefined || args[0] === null) {
    const uri = host.activeDocumentUri();
    if (!uri) {
      void host.showInfo('crane: open the notebook whose last cell to undo.');
      return undefined;
    }
    forwarded = [{ uri }];
  }
  const answer = await next(UNDO_COMMAND, forwarded);
  if (answer === undefined) return answer; // no server: its stand-in already said so
  const { ok, text } = undoMessage(answer);
  void (ok ? host.showInfo(text) : host.showWarning(text));
  return answer;
}
