// The language server's custom JSON-RPC contract (plain JSON, snake_case, every key present, null = unknown).
// Every type, method, runtime name and error code comes from protocol.generated.ts, which is generated from
// server/segue/lsp/protocol.py; only helpers that are the extension's own live here.
// No vscode import here, so the pure helpers that use these types run in plain Node unit tests too.
import type { Plan, PlanRefusal } from './protocol.generated';

export * from './protocol.generated';

/** Handoff tokens as minted by the server: `h_` then URL-safe base64. */
export const TOKEN_PATTERN = /^h_[A-Za-z0-9_-]+$/;

export function refOf(s: { runtime: string; id: string }): string {
  return `${s.runtime}:${s.id}`;
}

/** A claim's plan is either a plan or the reason none could be made. */
export function isPlan(p: Plan | PlanRefusal): p is Plan {
  return !('refused' in p);
}
