/**
 * The diff a fix makes, shown before anything changes: by the verdict box's Fix button (Apply /
 * Cancel) and by the run guard when it offers "Run with the fix". DOM only, textContent everywhere
 * (the lines are the user's code).
 */

import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { APPLY, CANCEL, FIX_NOTE, FIX_TITLE, type FixRow } from './generated/cellVerdict';
import { el } from './dom';
import { fixDiff, fixLabel } from './fixes';


/**
 * The fix's label, its old and new lines and, unless `lead` is given (the run guard's question, whose
 * third button runs the cell too), the note that applying it does not run the cell.
 */
export function fixBody(text: string, fix: FixRow, lead?: string): Widget {
  const node = el('div', 'crane-fix-body');
  if (lead) {
    node.appendChild(el('p', 'crane-fix-lead', lead));
  }
  const label = el('p', 'crane-fix-label', fixLabel(fix));
  label.dataset.verified = String(fix.verified);
  node.appendChild(label);
  const diff = el('pre', 'crane-fix-diff');
  const rows = fixDiff(text, fix);
  const width = String(Math.max(0, ...rows.map(r => r.line))).length;
  for (const row of rows) {
    const line = el(
      'div',
      row.kind === '-' ? 'crane-fix-old' : 'crane-fix-new',
      `${row.kind} ${String(row.line).padStart(width)} | ${row.text}`
    );
    diff.appendChild(line);
  }
  node.appendChild(diff);
  if (!lead) {
    node.appendChild(el('p', 'crane-fix-note', FIX_NOTE));
  }
  return new Widget({ node });
}

/** Asks before applying: the diff, then Apply or Cancel. True only on Apply. */
export async function confirmFix(text: string, fix: FixRow): Promise<boolean> {
  const answer = await showDialog({
    title: FIX_TITLE,
    body: fixBody(text, fix),
    buttons: [Dialog.cancelButton({ label: CANCEL }), Dialog.okButton({ label: APPLY })]
  });
  return answer.button.accept && answer.button.label === APPLY;
}
