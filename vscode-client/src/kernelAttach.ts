/**
 * Attaching a notebook's live kernel: ask the Jupyter extension's kernel for its connection file
 * (with the user's consent, asked once per workspace) and tell the server with
 * `crane/attachKernel {notebookUri, connectionFile}`. Re-attaches after a kernel restart.
 * Pure: the Jupyter API, the consent store and the LSP client are injected.
 */
import { CONNECTION_FILE_CODE, extractConnectionFile, type KernelOutput } from './connectionFile';
import type { AttachMode } from './status';

export const ATTACH_NOTIFICATION = 'crane/attachKernel';

export interface AttachKernelParams {
  notebookUri: string;
  connectionFile: string;
}

export function attachKernelParams(notebookUri: string, connectionFile: string): AttachKernelParams {
  return { notebookUri, connectionFile };
}

export interface Disposable {
  dispose(): void;
}

export interface CancelSource extends Disposable {
  readonly token: unknown;
  cancel(): void;
}

/** The part of the Jupyter extension's `Kernel` that is used. */
export interface KernelLike {
  readonly status?: string;
  onDidChangeStatus?: (listener: (status: string) => void) => Disposable;
  executeCode(code: string, token: never): AsyncIterable<KernelOutput>;
}

export interface JupyterLike {
  getKernel(notebookUri: string): PromiseLike<KernelLike | undefined>;
}

export type Consent = 'allow' | 'deny';

export interface AttachDeps {
  /** The Jupyter extension's kernels API; undefined when the extension is not installed. */
  jupyter(): Promise<JupyterLike | undefined>;
  getConsent(): Consent | undefined;
  setConsent(consent: Consent): Promise<void>;
  /** Asks the user; undefined when the question was dismissed. */
  askConsent(): Promise<Consent | undefined>;
  /** Sends `crane/attachKernel`. */
  notify(params: AttachKernelParams): Promise<void>;
  createCancel(): CancelSource;
  onModeChange(mode: AttachMode): void;
  log(message: string): void;
}

export type AttachOutcome =
  | { kind: 'attached'; connectionFile: string }
  | { kind: 'noJupyter' }
  | { kind: 'declined' }
  | { kind: 'noKernel' }
  | { kind: 'failed'; reason: string };

const RESTARTING = new Set(['starting', 'restarting', 'autorestarting', 'dead', 'terminating']);

export class KernelAttacher implements Disposable {
  private readonly attached = new Map<string, string>();
  /** Notebooks attached by hand ("Attach kernel from connection file…"): automatic attaching leaves them alone. */
  private readonly pinned = new Set<string>();
  private readonly watched = new Map<string, { kernel: KernelLike; subscription?: Disposable }>();
  private readonly inflight = new Map<string, Promise<AttachOutcome>>();
  private consentQuestion: Promise<Consent | undefined> | undefined;
  private dismissed = false;

  constructor(
    private readonly deps: AttachDeps,
    private readonly timeoutMs = 15_000,
  ) {}

  /** The connection file last sent for a notebook. */
  connectionFileOf(notebookUri: string): string | undefined {
    return this.attached.get(notebookUri);
  }

  /** Records a connection file the user chose for a notebook; it is re-sent after a server restart. */
  pin(notebookUri: string, connectionFile: string): void {
    this.attached.set(notebookUri, connectionFile);
    this.pinned.add(notebookUri);
  }

  isPinned(notebookUri: string): boolean {
    return this.pinned.has(notebookUri);
  }

  /**
   * Attaches one notebook; concurrent calls for the same notebook share one attempt. A pinned
   * notebook keeps its file unless the user asks for the Jupyter extension's kernel.
   */
  attach(notebookUri: string, options: { userInitiated?: boolean } = {}): Promise<AttachOutcome> {
    const pinned = this.attached.get(notebookUri);
    if (this.pinned.has(notebookUri) && pinned !== undefined) {
      if (!options.userInitiated) return Promise.resolve({ kind: 'attached', connectionFile: pinned });
      this.pinned.delete(notebookUri);
    }
    const running = this.inflight.get(notebookUri);
    if (running) return running;
    const attempt = this.doAttach(notebookUri, options.userInitiated ?? false).finally(() => {
      this.inflight.delete(notebookUri);
    });
    this.inflight.set(notebookUri, attempt);
    return attempt;
  }

  /** After a cell ran: attach when the notebook has no attached kernel or its kernel changed. */
  async ensureAttached(notebookUri: string): Promise<AttachOutcome | undefined> {
    if (this.pinned.has(notebookUri)) return undefined;
    const jupyter = await this.deps.jupyter();
    if (!jupyter || this.deps.getConsent() === 'deny' || this.dismissed) return undefined;
    const kernel = await jupyter.getKernel(notebookUri);
    const watched = this.watched.get(notebookUri);
    if (kernel && watched?.kernel === kernel && this.attached.has(notebookUri)) return undefined;
    return this.attach(notebookUri);
  }

  /** Sends every known attachment again (after the server restarted). */
  async resendAll(): Promise<void> {
    for (const [notebookUri, connectionFile] of this.attached) {
      await this.deps.notify(attachKernelParams(notebookUri, connectionFile));
    }
  }

  forget(notebookUri: string): void {
    this.attached.delete(notebookUri);
    this.pinned.delete(notebookUri);
    this.watched.get(notebookUri)?.subscription?.dispose();
    this.watched.delete(notebookUri);
  }

  dispose(): void {
    for (const uri of [...this.watched.keys()]) this.forget(uri);
  }

  private async consent(userInitiated: boolean): Promise<Consent | undefined> {
    const stored = this.deps.getConsent();
    if (stored === 'allow') return 'allow';
    if (!userInitiated && (stored === 'deny' || this.dismissed)) return 'deny';
    if (!this.consentQuestion) {
      this.consentQuestion = this.deps.askConsent().finally(() => {
        this.consentQuestion = undefined;
      });
    }
    const answer = await this.consentQuestion;
    if (answer) {
      this.dismissed = false;
      await this.deps.setConsent(answer);
    } else {
      this.dismissed = true;
    }
    return answer;
  }

  private async doAttach(notebookUri: string, userInitiated: boolean): Promise<AttachOutcome> {
    const jupyter = await this.deps.jupyter();
    if (!jupyter) {
      this.deps.onModeChange('noJupyter');
      this.deps.log('Jupyter extension not available: the server discovers kernels itself.');
      return { kind: 'noJupyter' };
    }
    if ((await this.consent(userInitiated)) !== 'allow') {
      this.deps.onModeChange('declined');
      this.deps.log('Kernel access declined: the server discovers kernels itself.');
      return { kind: 'declined' };
    }
    this.deps.onModeChange('jupyter');
    const kernel = await jupyter.getKernel(notebookUri);
    if (!kernel) {
      this.deps.log(`No kernel running for ${notebookUri} yet; will attach when a cell runs.`);
      return { kind: 'noKernel' };
    }
    this.watch(notebookUri, kernel);
    let outcome: AttachOutcome;
    try {
      const outputs = await this.run(kernel);
      const extraction = extractConnectionFile(outputs);
      outcome = 'connectionFile' in extraction
        ? { kind: 'attached', connectionFile: extraction.connectionFile }
        : { kind: 'failed', reason: extraction.error };
    } catch (error) {
      outcome = { kind: 'failed', reason: error instanceof Error ? error.message : String(error) };
    }
    if (outcome.kind === 'attached') {
      this.attached.set(notebookUri, outcome.connectionFile);
      await this.deps.notify(attachKernelParams(notebookUri, outcome.connectionFile));
      this.deps.log(`Attached ${notebookUri} to kernel ${outcome.connectionFile}.`);
    } else if (outcome.kind === 'failed') {
      this.deps.log(`Could not read the kernel's connection file for ${notebookUri}: ${outcome.reason}`);
    }
    return outcome;
  }

  private async run(kernel: KernelLike): Promise<KernelOutput[]> {
    const cancel = this.deps.createCancel();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        cancel.cancel();
        reject(new Error(`no answer from the kernel within ${this.timeoutMs} ms (is it busy?)`));
      }, this.timeoutMs);
    });
    const collect = (async () => {
      const outputs: KernelOutput[] = [];
      for await (const output of kernel.executeCode(CONNECTION_FILE_CODE, cancel.token as never)) outputs.push(output);
      return outputs;
    })();
    collect.catch(() => undefined); // a late failure after the timeout is already reported
    try {
      return await Promise.race([collect, timeout]);
    } finally {
      clearTimeout(timer);
      cancel.dispose();
    }
  }

  private watch(notebookUri: string, kernel: KernelLike): void {
    const current = this.watched.get(notebookUri);
    if (current?.kernel === kernel) return;
    current?.subscription?.dispose();
    let restarting = false;
    const subscription = kernel.onDidChangeStatus?.((status) => {
      if (RESTARTING.has(status)) {
        restarting = true;
      } else if (status === 'idle' && restarting) {
        restarting = false;
        this.deps.log(`Kernel of ${notebookUri} restarted: attaching again.`);
        void this.attach(notebookUri);
      }
    });
    this.watched.set(notebookUri, { kernel, subscription });
  }
}
