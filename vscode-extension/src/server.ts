// The Segue language server (`python -m segue serve`) behind a lazily started LanguageClient.
import * as vscode from 'vscode';
import {
  LanguageClient,
  RevealOutputChannelOn,
  State,
  WorkDoneProgress,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { type InitializationOptions, type Method, type MethodMap, type NotificationMap, Notifications } from './protocol';
import { type Launch, LaunchError, resolveLaunch } from './python';

/** One work-done report of a request in flight (LSP's WorkDoneProgressBegin/Report without their kind). */
export interface ProgressReport {
  message?: string;
  percentage?: number;
}

/** A request's progress shows only once it has taken this long, so a quick answer never flashes a message. */
export const PROGRESS_DELAY_MS = 400;

export class SegueServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient> | undefined;
  private readonly changed = new vscode.EventEmitter<string[]>();
  /** Fired on `segue/sessionsChanged` and after a restart (so views reload). */
  readonly onSessionsChanged = this.changed.event;
  private readonly started = new vscode.EventEmitter<Launch>();
  readonly onStarted = this.started.event;
  launch: Launch | undefined;
  private progressSeq = 0;

  constructor(
    private readonly extensionPath: string,
    readonly log: vscode.LogOutputChannel,
  ) {}

  /** A Segue request, typed by the contract: the method names its params and its result. With `onProgress`, the
   * request offers a `workDoneToken` and the server's work-done reports (a scan's sessions read, the search
   * index's sessions indexed) reach it until the reply. */
  async request<M extends Method>(
    method: M,
    params: MethodMap[M]['params'],
    token?: vscode.CancellationToken,
    onProgress?: (report: ProgressReport) => void,
  ): Promise<MethodMap[M]['result']> {
    const client = await this.ensure();
    type R = MethodMap[M]['result'];
    if (!onProgress) {
      return token ? client.sendRequest<R>(method, params, token) : client.sendRequest<R>(method, params);
    }
    const workDoneToken = `segue-${++this.progressSeq}`;
    const listening = client.onProgress(WorkDoneProgress.type, workDoneToken, (v) => {
      if (v.kind === 'report') {
        onProgress({ message: v.message, percentage: v.percentage }); // begin only names the method
      }
    });
    try {
      const withToken = { ...params, workDoneToken };
      return await (token ? client.sendRequest<R>(method, withToken, token) : client.sendRequest<R>(method, withToken));
    } finally {
      listening.dispose();
    }
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  private ensure(): Promise<LanguageClient> {
    // A crashed server stays stopped (maxRestartCount 0); the next request starts a fresh one.
    if (this.client && this.client.state === State.Stopped) {
      this.client = undefined;
      this.starting = undefined;
    }
    if (!this.starting) {
      this.starting = this.start().catch((e: unknown) => {
        this.starting = undefined;
        throw e;
      });
    }
    return this.starting;
  }

  private async start(): Promise<LanguageClient> {
    const launch = await resolveLaunch(this.extensionPath);
    this.launch = launch;
    this.log.info(
      `starting ${launch.python} -m segue serve (Python ${launch.version}, interpreter from ${launch.source}, segue ${launch.segue} from ${launch.segueFile ?? '?'}; SEGUE_HOME=${launch.segueHome ?? 'default'})`,
    );
    const serverOptions: ServerOptions = {
      command: launch.python,
      args: ['-m', 'segue', 'serve'], // no `transport`: stdio is the default and adds no --stdio flag
      options: { env: launch.env, cwd: this.extensionPath },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [], // custom requests only, no language features
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: { segueHome: launch.segueHome ?? null } satisfies InitializationOptions,
      connectionOptions: { maxRestartCount: 0 },
    };
    const client = new LanguageClient('segue', 'Segue', serverOptions, clientOptions);
    const changed = Notifications.sessionsChanged;
    client.onNotification(changed, (p: Partial<NotificationMap[typeof changed]> | undefined) =>
      this.changed.fire(p?.runtimes ?? []),
    );
    try {
      await client.start();
    } catch (e) {
      await client.dispose().catch(() => undefined);
      throw new LaunchError(
        `The Segue server did not start: ${e instanceof Error ? e.message : String(e)}`,
        `Run "${launch.python} -m segue serve" in a terminal to see why, then use "Segue: Restart Server".`,
      );
    }
    this.client = client;
    this.started.fire(launch);
    return client;
  }

  async restart(): Promise<void> {
    await this.stop();
    this.changed.fire([]);
  }

  async stop(): Promise<void> {
    const pending = this.starting;
    this.client = undefined;
    this.starting = undefined;
    const client = await pending?.catch(() => undefined);
    if (client && client.state !== State.Stopped) {
      await client.stop().catch((e: unknown) => this.log.warn(`stopping the server: ${String(e)}`));
    }
  }

  dispose(): void {
    void this.stop();
    this.changed.dispose();
    this.started.dispose();
  }
}
