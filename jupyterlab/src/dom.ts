/**
 * The one DOM helper the verdict box and the fix dialog share: an element with a class and, when
 * given, its text set as textContent (never HTML: messages quote user code and data).
 */
export function el(tag: string, cls: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = cls;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}
