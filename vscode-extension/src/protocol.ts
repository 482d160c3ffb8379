// The language server's custom JSON-RPC contract (plain JSON, snake_case, every key present, null = unknown).
// No vscode import here, so the pure helpers that use these types run in plain Node unit tests too.

export const RUNTIMES = ['claude', 'codex', 'opencode', 'cline'] as const;
export type Runtime = (typeof RUNTIMES)[number];

export interface HandedOff {
  surface: string;
  since: string | null;
  expires_at: string | null;
}

export interface SessionRef {
  runtime: string;
  id: string;
}

export interface Session extends SessionRef {
  title: string | null;
  first_request: string | null;
  cwd: string | null;
  branch: string | null;
  started_at: string | null;
  updated_at: string | null;
  model: string | null;
  parent_id: string | null;
  resumable: boolean;
  resume_blocker: null | 'subagent' | 'not_in_store' | 'cli_cannot_reopen';
  live: boolean;
  handed_off: HandedOff | null;
  continues: SessionRef | null;
  subagent_count: number;
  store_path: string | null;
  problems: string[];
}

export interface ListSessionsParams {
  runtime?: string | string[];
  dir?: string;
  include_subagents?: boolean;
  limit?: number;
}

export interface ListSessionsResult {
  sessions: Session[];
  skipped: number;
  skipped_reasons: string[];
}

export interface BriefResult {
  uri: string;
  markdown: string;
  facts: Record<string, unknown>;
}

export type PlanReason =
  | 'native'
  | 'requested'
  | 'other_runtime'
  | 'subagent'
  | 'not_in_store'
  | 'not_resumable'
  | 'cwd_override';

export interface ResumePlan {
  mode: 'native' | 'new_session';
  reason: PlanReason | string;
  runtime: string;
  argv: string[];
  cwd: string;
  brief_path: string | null;
  session: SessionRef & { title: string | null };
  handed_off: HandedOff | null;
}

export interface PlanResumeParams {
  ref: string;
  runtime?: string;
  new?: boolean;
  cwd?: string;
}

export interface EmitTokenResult {
  token: string;
  expires_at: string;
}

export interface ClaimTokenResult {
  session: SessionRef & { title: string | null; cwd: string | null };
  source_surface: string;
  claimed_as: string;
  active_task: string | null;
  tail: { kind: string; text: string }[];
  brief_path: string | null;
  plan: ResumePlan | null;
}

export interface TraceLink extends SessionRef {
  title: string | null;
  started_at: string | null;
  continues: SessionRef | null;
}

export interface TraceResult {
  chain: TraceLink[];
}

export interface ResumeCommandParams extends PlanResumeParams {
  shell?: 'posix' | 'powershell';
}

export interface ResumeCommandResult {
  command: string;
  shell: 'posix' | 'powershell';
  plan: ResumePlan;
}

export interface TokenStatus {
  session: SessionRef & { title: string | null };
  surface: string;
  issued_at: string | null;
  expires_at: string | null;
  seconds_left: number;
  claimed: boolean;
  claimed_as: string | null;
}

export interface TokenStatusResult {
  tokens: TokenStatus[];
}

export interface RevokeTokenResult {
  revoked: number;
  session: SessionRef & { title: string | null };
}

export interface Location {
  runtime: string;
  path: string;
  exists: boolean;
  how_to_override: string | null;
}

export interface LocationsResult {
  locations: Location[];
}

export interface DemoResult {
  markdown: string;
}

export const Methods = {
  listSessions: 'segue/listSessions',
  brief: 'segue/brief',
  planResume: 'segue/planResume',
  emitToken: 'segue/emitToken',
  claimToken: 'segue/claimToken',
  trace: 'segue/trace',
  tokenStatus: 'segue/tokenStatus',
  resumeCommand: 'segue/resumeCommand',
  revokeToken: 'segue/revokeToken',
  locations: 'segue/locations',
  demo: 'segue/demo',
  sessionsChanged: 'segue/sessionsChanged',
} as const;

/** Segue's own JSON-RPC error codes (the server puts a `reason` in `data`). */
export const ErrorCodes = {
  invalidParams: -32602,
  unknownSession: -32010,
  ambiguousSession: -32011,
  malformedToken: -32020,
  unknownToken: -32021,
  expiredToken: -32022,
  claimedToken: -32023,
  revokedToken: -32024,
  missingDirectory: -32030,
  missingCli: -32031,
  badTarget: -32032,
  storeUnreadable: -32040,
  unsafeDirectory: -32041,
  permissionDenied: -32042,
  internal: -32050,
} as const;

/** Handoff tokens as minted by the server: `h_` then URL-safe base64. */
export const TOKEN_PATTERN = /^h_[A-Za-z0-9_-]+$/;

export function refOf(s: SessionRef): string {
  return `${s.runtime}:${s.id}`;
}
