/**
 * The verdict box under a cell: exception and message, the runtime facts, the origin cells as
 * links. Built with the DOM only (textContent everywhere: messages quote user code and data).
 */

import { FIX, LABEL, type FixRow } from './generated/cellVerdict';
import { el } from './dom';
import { fixLabel, topFix } from './fixes';
import type { IVerdict } from './guard';

export interface IVerdictView {
  verdict: IVerdict;
  stale: boolean;
  /** A label for an origin cell ("[3]", "cell 2") and what clicking it does. */
  originLabel: (o: NonNullable<IVerdict['origin']>[number]) => string | null;
  onOrigin: (o: NonNullable<IVerdict['origin']>[number]) => void;
  /** The Fix button was pressed (shown for the top fix of a verdict that is not stale). */
  onFix?: (fix: FixRow) => void;
}



export function renderVerdict(view: IVerdictView): HTMLElement {
  const v = view.verdict;
  const box = el('div', 'crane-verdict');
  box.dataset.certainty = v.certainty || '';
  if (view.stale) {
    box.classList.add('crane-verdict-stale');
  }
  const head = el('div', 'crane-verdict-head');
  head.appendChild(el('span', 'crane-verdict-logo', 'crane'));
  head.appendChild(el('span', 'crane-verdict-exc', v.exception || 'crash'));
  const where = typeof v.line === 'number' ? ` on line ${v.line + 1}` : '';
  head.appendChild(el('span', 'crane-verdict-how', `${LABEL[v.certainty || ''] || 'may crash'}${where}`));
  if (view.stale) {
    head.appendChild(el('span', 'crane-verdict-stale-tag', '(stale: re-checking)'));
  }
  box.appendChild(head);
  if (v.message) {
    box.appendChild(el('div', 'crane-verdict-msg', v.message));
  }
  if (v.diagnosis && v.diagnosis !== v.message) {
    box.appendChild(el('div', 'crane-verdict-diag', v.diagnosis));
  }
  if (v.evidence && v.evidence.length) {
    const facts = el('ul', 'crane-verdict-facts');
    for (const e of v.evidence.slice(0, 8)) {
      const li = el('li', 'crane-verdict-fact');
      li.appendChild(el('code', '', e.fact));
      li.appendChild(document.createTextNode(' = '));
      li.appendChild(el('span', '', e.value));
      facts.appendChild(li);
    }
    box.appendChild(facts);
  }
  const origins = (v.origin || []).filter(o => view.originLabel(o) !== null);
  if (origins.length) {
    const line = el('div', 'crane-verdict-origin', 'origin: ');
    origins.forEach((o, i) => {
      if (i) {
        line.appendChild(document.createTextNode(', '));
      }
      const a = el('a', 'crane-origin-link', `${o.variable} ← ${view.originLabel(o)}`) as HTMLAnchorElement;
      a.href = '#';
      a.title = 'scroll to the cell that made this state';
      a.addEventListener('click', event => {
        event.preventDefault();
        view.onOrigin(o);
      });
      line.appendChild(a);
    });
    box.appendChild(line);
  }
  const fix = topFix(v);
  if (fix && view.onFix && !view.stale) {
    box.appendChild(fixRow(fix, view.onFix));
  } else if (v.fix) {
    box.appendChild(el('div', 'crane-verdict-fix', `fix: ${v.fix}`));
  }
  if (v.source) {
    box.appendChild(el('div', 'crane-verdict-source', `source: ${v.source}`));
  }
  return box;
}

/** "Fix: Use 'price' (runs clean in a dry run)": a gets-further fix says so, and is marked. */
function fixRow(fix: FixRow, onFix: (fix: FixRow) => void): HTMLElement {
  const row = el('div', 'crane-verdict-fixrow');
  const button = el('button', 'crane-fix-button jp-mod-styled', `${FIX}: ${fixLabel(fix)}`) as HTMLButtonElement;
  button.type = 'button';
  button.dataset.verified = String(fix.verified);
  if (!fix.verified) {
    button.classList.add('crane-fix-unverified');
  }
  button.addEventListener('click', event => {
    event.preventDefault();
    event.stopPropagation(); // a click in the box must not select or enter the cell
    onFix(fix);
  });
  row.appendChild(button);
  return row;
}
