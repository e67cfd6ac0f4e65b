/** Entry point; everything that touches VS Code lives in host.ts. */
export { activate, deactivate } from './host';
