// GENERATED from server/segue/lsp/protocol.py by `python -m segue.lsp.typescript`: do not edit.
// Regenerate with `npm run protocol` (in vscode-extension); the build and tests/test_wire_contract.py fail when
// this file and the Python contract differ.
// No vscode import here, so the pure helpers that use these types run in plain Node unit tests too.

/** The runtimes Segue reads, in the registry's order (`segue.stores.REGISTRY`). */
export const RUNTIMES = ['claude', 'codex', 'opencode', 'cline', 'gemini'] as const;
export type Runtime = (typeof RUNTIMES)[number];

export function isRuntime(value: string): value is Runtime {
  return (RUNTIMES as readonly string[]).includes(value);
}

/** Display names, the same in briefs, plans and errors. */
export const RUNTIME_NAMES: Readonly<Record<Runtime, string>> = {
  claude: 'Claude Code',
  codex: 'Codex CLI',
  opencode: 'OpenCode',
  cline: 'Cline',
  gemini: 'Gemini CLI',
};

/** Codicons only: the runtimes' own logos are trademarks and not part of the icon font. */
export const RUNTIME_ICONS: Readonly<Record<Runtime, string>> = {
  claude: 'sparkle',
  codex: 'terminal',
  opencode: 'code',
  cline: 'robot',
  gemini: 'star-empty',
};

/** Why a plan reopens a session natively or starts a new one, as the CLI says it. */
export const PLAN_REASONS = {
  native: 'the session reopens in its own runtime',
  requested: 'a new session was requested',
  other_runtime: 'another runtime continues from the brief',
  subagent: 'a subagent cannot be reopened; a new session starts from the brief',
  not_in_store: 'the runtime\'s CLI cannot find this session; a new session starts from the brief',
  not_resumable: 'this session cannot be reopened; a new session starts from the brief',
  cwd_override: 'a different directory was chosen; a new session starts from the brief',
} as const;

export type PlanReason = keyof typeof PLAN_REASONS;

export type PlanMode = 'native' | 'new_session';
export type Shell = 'posix' | 'powershell';
export type ResumeBlocker = 'subagent' | 'not_in_store' | 'cli_cannot_reopen' | 'no_directory';
export type StepKind = 'request' | 'message' | 'command' | 'edit' | 'tool' | 'subagent';
export type SearchWhere = 'request' | 'message' | 'command' | 'file';
export type SearchIn = 'requests' | 'messages' | 'commands' | 'files';
export type RefusalReason = 'missing_directory' | 'missing_cli' | 'bad_target';

/** Every `data.reason` an error reply carries, with its JSON-RPC code. */
export const ERROR_CODES = {
  invalid_params: -32602, // bad params; the message names the field
  cancelled: -32800, // the request was cancelled
  unknown_session: -32010, // no session matches the ref (data.ref)
  ambiguous_session: -32011, // the ref matches several sessions (data.candidates)
  malformed: -32020, // a handoff token of the wrong shape
  unknown: -32021, // a handoff token not in the registry
  expired: -32022, // a handoff token past its lifetime
  claimed: -32023, // a handoff token already claimed
  revoked: -32024, // a handoff token revoked
  missing_directory: -32030, // the session's directory is gone or unknown (data.cwd)
  missing_cli: -32031, // the runtime's CLI is not on PATH (data.runtime, data.install)
  bad_target: -32032, // the plan cannot be carried out there
  unsafe_directory: -32041, // Segue's state directory is not private
  permission_denied: -32042, // permission denied in Segue's state directory
  internal: -32050, // a bug: see the server log
  search_unavailable: -32060, // this Python's SQLite has no full-text search (FTS5)
} as const;
export type ErrorReason = keyof typeof ERROR_CODES;

export interface ListSessionsParams {
  runtime?: Runtime | Runtime[] | null;
  dir?: string | null;
  include_subagents?: boolean;
  limit?: number | null;
  offset?: number;
}

export interface RefParams {
  ref: string;
}

export interface PlanResumeParams {
  ref: string;
  runtime?: Runtime | null;
  new?: boolean;
  cwd?: string | null;
  write?: boolean;
}

export interface EmitTokenParams {
  ref: string;
  from?: string;
}

export interface ClaimTokenParams {
  token: string;
  as?: string;
  tail?: number;
}

export interface SearchParams {
  query: string;
  runtime?: Runtime | Runtime[] | null;
  dir?: string | null;
  since?: string | null;
  in?: SearchIn[] | null;
  limit?: number;
}

export interface ResumeCommandParams {
  ref: string;
  runtime?: Runtime | null;
  new?: boolean;
  cwd?: string | null;
  shell?: Shell;
}

export interface RevokeTokenParams {
  ref: string;
  surface?: string;
}

export type NoParams = Record<string, never>;

export interface InitializationOptions {
  segueHome?: string | null;
  watch?: boolean;
}

export interface SessionRef {
  runtime: Runtime;
  id: string;
}

/** A session named in a reply; its title is the session's, else its first request (null: neither known). */
export interface TitledRef {
  runtime: Runtime;
  id: string;
  title: string | null;
}

/** A live, unclaimed handoff token exists for the session. */
export interface HandedOff {
  surface: string;
  since: string | null;
  expires_at: string | null;
}

/** One session, as `segue list --json` prints it (`model.Session.to_json`). */
export interface Session {
  runtime: Runtime;
  id: string;
  title: string | null;
  first_request: string | null;
  cwd: string | null;
  branch: string | null;
  started_at: string | null;
  updated_at: string | null;
  model: string | null;
  parent_id: string | null;
  resumable: boolean;
  resume_blocker: ResumeBlocker | null;
  live: boolean;
  handed_off: HandedOff | null;
  continues: SessionRef | null;
  subagent_count: number;
  store_path: string;
  problems: string[];
}

export interface ListSessionsResult {
  sessions: Session[];
  skipped: number;
  skipped_reasons: string[];
  total: number;
  next_offset: number | null;
}

export interface FactsSession {
  runtime: Runtime;
  id: string;
  title: string | null;
  cwd: string | null;
  branch: string | null;
  model: string | null;
  started_at: string | null;
  updated_at: string | null;
}

export interface FileChange {
  path: string;
  added: number | null;
  removed: number | null;
}

export interface CommandRun {
  command: string;
  exit_code: number | null;
  /** failed, rejected, interrupted or running, when the exit code is unknown */
  status: string | null;
}

export interface StepText {
  kind: StepKind;
  text: string;
}

/** What a brief is written from, as `segue brief --json` prints it (`brief.Facts.to_json`). */
export interface Facts {
  session: FactsSession;
  first_request: string | null;
  latest_request: string | null;
  last_agent_message: string | null;
  files_changed: FileChange[];
  commands: CommandRun[];
  steps: StepText[];
  redactions: number;
  truncated_steps: number;
  damaged_lines: number;
  from_kept_facts: boolean;
  kept_at: string | null;
  omitted_commands: number;
  omitted_files: number;
  problems: string[];
}

export interface BriefResult {
  /** segue-brief:/RUNTIME/ID.md */
  uri: string;
  markdown: string;
  facts: Facts;
}

/** A resume plan, as `segue resume --dry-run` prints it. Nothing runs until the person confirms. */
export interface Plan {
  mode: PlanMode;
  reason: PlanReason;
  runtime: Runtime;
  argv: string[];
  cwd: string;
  brief_path: string | null;
  session: TitledRef;
  handed_off: HandedOff | null;
  /** another process has the session open: confirm with a warning */
  live: boolean;
}

/** A claim's plan that cannot be carried out, with the refusal's details. */
export interface PlanRefusal {
  refused: RefusalReason;
  message: string;
  cwd?: string | null;
  runtime?: Runtime;
  install?: string;
  install_command?: string;
}

export interface EmitTokenResult {
  token: string;
  expires_at: string;
  brief_path: string;
  session: TitledRef;
}

export interface ClaimedSession {
  runtime: Runtime;
  id: string;
  title: string | null;
  cwd: string | null;
}

/** As `segue handoff claim --json` prints it. */
export interface ClaimTokenResult {
  session: ClaimedSession;
  source_surface: string | null;
  claimed_as: string;
  active_task: string | null;
  tail: StepText[];
  brief_path: string | null;
  plan: Plan | PlanRefusal;
}

/** A token still within its lifetime (never the token itself). */
export interface TokenStatus {
  session: TitledRef;
  surface: string;
  issued_at: string | null;
  expires_at: string | null;
  /** at the time of the reply */
  seconds_left: number;
  claimed: boolean;
  claimed_as: string | null;
}

export interface TokenStatusResult {
  tokens: TokenStatus[];
}

/**
 * One session of the chain; `found` false: a session a marker names that Segue cannot find (no store it
 * reads holds it, and no brief of it was kept), so its title and time are null.
 */
export interface TraceLink {
  runtime: Runtime;
  id: string;
  title: string | null;
  started_at: string | null;
  continues: SessionRef | null;
  found: boolean;
}

export interface TraceResult {
  chain: TraceLink[];
}

export interface SearchResult {
  runtime: Runtime;
  id: string;
  title: string | null;
  cwd: string | null;
  updated_at: string | null;
  where: SearchWhere;
  /** the match between « and » */
  snippet: string;
  step: number;
  parent_id: string | null;
  /** a subagent's parent, named as the listing names it (null: not known) */
  parent_title: string | null;
  exit_code: number | null;
}

export interface SearchResults {
  results: SearchResult[];
  total: number;
}

export interface ResumeCommandResult {
  command: string;
  shell: Shell;
  plan: Plan;
}

export interface RevokeTokenResult {
  revoked: number;
  session: TitledRef;
}

export interface Location {
  runtime: Runtime;
  path: string;
  exists: boolean;
  how_to_override: string | null;
  /** top-level sessions listed from this place; a runtime's places add up to its sessions */
  sessions: number;
}

export interface LocationsResult {
  locations: Location[];
}

export interface DemoResult {
  markdown: string;
}

/** A runtime's CLI, as a plan would look for it on this machine's PATH. */
export interface RuntimeCli {
  runtime: Runtime;
  cli: string;
  installed: boolean;
  /** how to install it, a sentence ("install Cline: npm install -g cline") */
  install: string;
}

export interface RuntimesResult {
  runtimes: RuntimeCli[];
}

export interface SessionsChangedParams {
  runtimes: Runtime[];
}

/** `data` of an error reply: the reason, plus the details some reasons carry. */
export interface ErrorData {
  reason: ErrorReason;
  ref?: string;
  candidates?: string[];
  cwd?: string | null;
  runtime?: Runtime;
  install?: string;
  install_command?: string;
}

/** Segue's requests (client to server), by short name. */
export const Methods = {
  listSessions: 'segue/listSessions',
  brief: 'segue/brief',
  planResume: 'segue/planResume',
  emitToken: 'segue/emitToken',
  claimToken: 'segue/claimToken',
  tokenStatus: 'segue/tokenStatus',
  trace: 'segue/trace',
  search: 'segue/search',
  resumeCommand: 'segue/resumeCommand',
  revokeToken: 'segue/revokeToken',
  locations: 'segue/locations',
  runtimes: 'segue/runtimes',
  demo: 'segue/demo',
} as const;
export const Notifications = {
  sessionsChanged: 'segue/sessionsChanged',
} as const;

/** Each request's params and result: `SegueServer.request` is typed by this map. */
export type MethodMap = {
  /**
   * Sessions as `segue list --json`. A page: `limit` and `offset` count top-level sessions (each followed by
   * its subagents with include_subagents); `total` is how many top-level sessions match the filters,
   * `next_offset` the offset of the next page (null on the last one). No params: every session.
   */
  'segue/listSessions': { params: ListSessionsParams; result: ListSessionsResult };
  /** The brief of a session: its Markdown and the facts it is written from. */
  'segue/brief': { params: RefParams; result: BriefResult };
  /**
   * The plan of `segue resume`; nothing is launched. A new session's brief is written unless `write` is
   * false.
   */
  'segue/planResume': { params: PlanResumeParams; result: Plan };
  /** A single-use handoff token for the session. */
  'segue/emitToken': { params: EmitTokenParams; result: EmitTokenResult };
  /** Claims a handoff token: `segue handoff claim --json`. */
  'segue/claimToken': { params: ClaimTokenParams; result: ClaimTokenResult };
  /** Tokens still within their lifetime (never a token). */
  'segue/tokenStatus': { params: NoParams; result: TokenStatusResult };
  /** The sessions a task went through, as `segue trace --json`. */
  'segue/trace': { params: RefParams; result: TraceResult };
  /** As `segue search --json`; an unsearchable query is -32602. */
  'segue/search': { params: SearchParams; result: SearchResults };
  /**
   * The command of `segue resume --print` and its plan (a runtime CLI missing here is no error: the line may
   * be pasted on another machine).
   */
  'segue/resumeCommand': { params: ResumeCommandParams; result: ResumeCommandResult };
  /** Revokes the live, unclaimed tokens that surface emitted for the session. */
  'segue/revokeToken': { params: RevokeTokenParams; result: RevokeTokenResult };
  /** Where the stores were looked for. */
  'segue/locations': { params: NoParams; result: LocationsResult };
  /** Each runtime's CLI and whether it is on PATH where the server runs (a plan needs it to launch). */
  'segue/runtimes': { params: NoParams; result: RuntimesResult };
  /**
   * The bundled sample store listed and one session briefed, as `segue demo` prints them (read from a
   * temporary copy).
   */
  'segue/demo': { params: NoParams; result: DemoResult };
};
export type Method = keyof MethodMap;

export type NotificationMap = {
  /** A watched store gained sessions or activity. */
  'segue/sessionsChanged': SessionsChangedParams;
};
