/**
 * Attaching a notebook's live kernel: ask the Jupyter extension's kernel for its connection file
 * (with the user's consent, asked once per workspace) and tell the server with
 * `crane/attachKernel {notebookUri, connectionFile}`. When that file is not on this machine (the
 * kernel runs on a remote Jupyter server), the server is told `{notebookUri, relay: true}` instead
 * and reads the kernel through the editor (relay.ts). Re-attaches after a kernel restart.
 * Pure: the Jupyter API, the consent store and the LSP client are injected.
 */
import { CONNECTION_FILE_CODE, extractConnectionFile, type KernelOutput } from './connectionFile';
import type { AttachMode } from './status';

export const ATTACH_NOTIFICATION = 'crane/attachKernel';

/** What the server is told: a connection file, a kernel URL, or "relay through the editor". */
export type AttachKernelParams =
  | { notebookUri: string; connectionFile: string }
  | { notebookUri: string; kernelUrl: string }
  | { notebookUri: string; relay: true };

/** Where a notebook's kernel is, without the notebook: what is kept and re-sent. */
export type AttachTarget = { connectionFile: string } | { kernelUrl: string } | { relay: true };

export function attachKernelParams(notebookUri: string, connectionFile: string): AttachKernelParams {
  return { notebookUri, connectionFile };
}

export function paramsFor(notebookUri: string, target: AttachTarget): AttachKernelParams {
  return { notebookUri, ...target };
}

/** A target as a person reads it (never a token: kernel URLs are kept without one). */
export function describeTarget(target: AttachTarget): string {
  if ('connectionFile' in target) return target.connectionFile;
  if ('kernelUrl' in target) return target.kernelUrl;
  return "the editor's own kernel connection (relayed)";
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
  readonly language?: string;
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
  /** Whether a connection file exists, readable, on the machine the server runs on (this one). */
  fileExists(path: string): Promise<boolean>;
  createCancel(): CancelSource;
  onModeChange(mode: AttachMode): void;
  log(message: string): void;
}

export type AttachOutcome =
  | { kind: 'attached'; connectionFile: string }
  | { kind: 'relayed'; connectionFile?: string }
  | { kind: 'noJupyter' }
  | { kind: 'declined' }
  | { kind: 'noKernel' }
  | { kind: 'failed'; reason: string };

const RESTARTING = new Set(['starting', 'restarting', 'autorestarting', 'dead', 'terminating']);

export class KernelAttacher implements Disposable {
  private readonly attached = new Map<string, AttachTarget>();
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
    const target = this.attached.get(notebookUri);
    return target && 'connectionFile' in target ? target.connectionFile : undefined;
  }

  /** What was last sent for a notebook. */
  targetOf(notebookUri: string): AttachTarget | undefined {
    return this.attached.get(notebookUri);
  }

  /** Records a kernel the user chose for a notebook (a file or a URL); it is re-sent after a server restart. */
  pin(notebookUri: string, target: string | AttachTarget): void {
    this.attached.set(notebookUri, typeof target === 'string' ? { connectionFile: target } : target);
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
      if (!options.userInitiated) return Promise.resolve({ kind: 'attached', connectionFile: describeTarget(pinned) });
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
    for (const [notebookUri, target] of this.attached) {
      await this.deps.notify(paramsFor(notebookUri, target));
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
    if (outcome.kind === 'attached' && !(await this.deps.fileExists(outcome.connectionFile))) {
      // the kernel runs elsewhere (a remote Jupyter server): its file is not on this machine
      if (kernel.language !== undefined && kernel.language !== 'python') {
        outcome = { kind: 'failed', reason: `${outcome.connectionFile} is not on this machine, and a ${kernel.language} kernel cannot be relayed` };
      } else {
        outcome = { kind: 'relayed', connectionFile: outcome.connectionFile };
      }
    }
    if (outcome.kind === 'attached' || outcome.kind === 'relayed') {
      const target: AttachTarget = outcome.kind === 'attached' ? { connectionFile: outcome.connectionFile } : { relay: true };
      this.attached.set(notebookUri, target);
      await this.deps.notify(paramsFor(notebookUri, target));
      this.deps.log(
        outcome.kind === 'attached'
          ? `Attached ${notebookUri} to kernel ${outcome.connectionFile}.`
          : `Attached ${notebookUri} through the editor: the kernel's connection file (${outcome.connectionFile ?? 'unknown'}) is not on this machine, so crane's requests are relayed through the Jupyter extension.`,
      );
    } else if (outcome.kind === 'failed') {
      this.deps.log(`Could not read the kernel's connection file for ${notebookUri}: ${outcome.reason}`);
    }
    return outcome;
  }

  /**
   * Never cancels: the Jupyter extension interrupts the kernel when a started `executeCode` is
   * cancelled, and on a shared kernel that interrupt could reach someone else's cell. A late answer
   * is simply dropped; the code (one print) ends by itself.
   */
  private async run(kernel: KernelLike): Promise<KernelOutput[]> {
    const cancel = this.deps.createCancel();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
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
      void collect.finally(() => cancel.dispose()).catch(() => undefined);
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
