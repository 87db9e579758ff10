// Types of `treelog/pi`: treelog's SessionManager and functions (the runtime is index.js, the
// same as `treelog`'s), typed with pi-coding-agent's own declarations when
// @earendil-works/pi-coding-agent is installed, so that `createAgentSession({ sessionManager:
// SessionManager.open(file) })` compiles without a cast: pi's SessionManager class has private
// members, so TypeScript accepts no other class in its place, however alike.
//
// Without pi installed (it is an optional peer dependency), the import of pi below resolves to
// nothing, its error is silenced, and every export falls back to treelog's own type from
// index.d.ts, so this entry still type-checks on its own.
//
// Types pi's package root does not export (UsageEntry, LabelEntry, AgentMessage, Usage, ...) are
// read off the ones it does. Functions of pi's session-manager module that its root does not
// export (assertValidSessionId, projectContextEntry, getDefaultSessionDir, loadEntriesFromFile,
// findMostRecentSession) keep pi's signatures, over these types. search and reindexSearch are
// treelog's own.
//
// This file is CommonJS (pi.cjs is `require("./index.js")`); pi.d.ts re-exports it for `import`.
// The `resolution-mode` attributes let it read the ES-module declarations of pi and index.d.ts.

import type * as Treelog from "./index.js" with { "resolution-mode": "import" };
// @ts-ignore -- without pi installed, `Pi` is an error type and `Either` picks treelog's type.
import type * as Pi from "@earendil-works/pi-coding-agent" with { "resolution-mode": "import" };

/** `P` (pi's type), or `T` (treelog's) where pi is not installed and `P` is an error type. */
type Either<P, T> = [P] extends [{ readonly __treelogNotInPi: never }] ? T : P;

// ---- the session manager ----

export declare const SessionManager: Either<typeof Pi.SessionManager, typeof Treelog.SessionManager>;
export type SessionManager = Either<Pi.SessionManager, Treelog.SessionManager>;
export type ReadonlySessionManager = Pick<SessionManager, "getCwd" | "getSessionDir" | "getSessionId" | "getSessionFile" | "getLeafId" | "getLeafEntry" | "getEntry" | "getLabel" | "getBranch" | "buildContextEntries" | "buildSessionProjection" | "getHeader" | "getEntries" | "getTree" | "getSessionName">;
export declare const CURRENT_SESSION_VERSION: Either<typeof Pi.CURRENT_SESSION_VERSION, typeof Treelog.CURRENT_SESSION_VERSION>;

// ---- entries and contexts: pi's exported types ----

export type SessionHeader = Either<Pi.SessionHeader, Treelog.SessionHeader>;
export type NewSessionOptions = Either<Pi.NewSessionOptions, Treelog.NewSessionOptions>;
export type SessionEntryBase = Either<Pi.SessionEntryBase, Treelog.SessionEntryBase>;
export type SessionMessageEntry = Either<Pi.SessionMessageEntry, Treelog.SessionMessageEntry>;
export type ThinkingLevelChangeEntry = Either<Pi.ThinkingLevelChangeEntry, Treelog.ThinkingLevelChangeEntry>;
export type ModelChangeEntry = Either<Pi.ModelChangeEntry, Treelog.ModelChangeEntry>;
export type CompactionEntry<T = unknown> = Either<Pi.CompactionEntry<T>, Treelog.CompactionEntry<T>>;
export type BranchSummaryEntry<T = unknown> = Either<Pi.BranchSummaryEntry<T>, Treelog.BranchSummaryEntry<T>>;
export type CustomEntry<T = unknown> = Either<Pi.CustomEntry<T>, Treelog.CustomEntry<T>>;
export type SessionInfoEntry = Either<Pi.SessionInfoEntry, Treelog.SessionInfoEntry>;
export type CustomMessageEntry<T = unknown> = Either<Pi.CustomMessageEntry<T>, Treelog.CustomMessageEntry<T>>;
export type ContextEditableContent = Either<Pi.ContextEditableContent, Treelog.ContextEditableContent>;
export type ContextEditEntry = Either<Pi.ContextEditEntry, Treelog.ContextEditEntry>;
export type SessionEntry = Either<Pi.SessionEntry, Treelog.SessionEntry>;
export type FileEntry = Either<Pi.FileEntry, Treelog.FileEntry>;
export type SessionTreeNode = Either<Pi.SessionTreeNode, Treelog.SessionTreeNode>;
export type ProjectedSessionEntry = Either<Pi.ProjectedSessionEntry, Treelog.ProjectedSessionEntry>;
export type SessionProjection = Either<Pi.SessionProjection, Treelog.SessionProjection>;
export type SessionContext = Either<Pi.SessionContext, Treelog.SessionContext>;
export type SessionInfo = Either<Pi.SessionInfo, Treelog.SessionInfo>;

// ---- types pi's root does not export, read off those it does ----

export type UsageEntry = Either<Extract<Pi.SessionEntry, { type: "usage" }>, Treelog.UsageEntry>;
export type LabelEntry = Either<Extract<Pi.SessionEntry, { type: "label" }>, Treelog.LabelEntry>;
/** pi-agent-core's AgentMessage. */
export type AgentMessage = Either<Pi.SessionMessageEntry["message"], Treelog.AgentMessage>;
/** What `appendMessage` takes: pi's `Message | CustomMessage | BashExecutionMessage`, all of them AgentMessages. */
export type Message = AgentMessage;
export type CustomMessage = AgentMessage;
export type BashExecutionMessage = AgentMessage;
export type SystemMessage = Either<NonNullable<Pi.CompactionEntry["systemMessage"]>, Treelog.SystemMessage>;
/** pi-ai's Usage: token counts and cost. */
export type Usage = Either<Extract<Pi.SessionEntry, { type: "usage" }>["usage"], Treelog.Usage>;
type CustomContentPart = Exclude<Pi.CustomMessageEntry["content"], string>[number];
export type TextContent = Either<Extract<CustomContentPart, { type: "text" }>, Treelog.TextContent>;
export type ImageContent = Either<Extract<CustomContentPart, { type: "image" }>, Treelog.ImageContent>;
export type SessionListProgress = (loaded: number, total: number,
/** Sessions loaded so far, sorted by activity. Present on periodic updates. */
partialSessions?: readonly SessionInfo[]) => void;

// ---- functions pi's root exports ----

export declare const migrateSessionEntries: Either<typeof Pi.migrateSessionEntries, typeof Treelog.migrateSessionEntries>;
export declare const parseSessionEntries: Either<typeof Pi.parseSessionEntries, typeof Treelog.parseSessionEntries>;
export declare const getLatestCompactionEntry: Either<typeof Pi.getLatestCompactionEntry, typeof Treelog.getLatestCompactionEntry>;
export declare const sessionEntryToContextMessages: Either<typeof Pi.sessionEntryToContextMessages, typeof Treelog.sessionEntryToContextMessages>;
export declare const buildContextEntries: Either<typeof Pi.buildContextEntries, typeof Treelog.buildContextEntries>;
export declare const buildSessionProjection: Either<typeof Pi.buildSessionProjection, typeof Treelog.buildSessionProjection>;
export declare const buildSessionContext: Either<typeof Pi.buildSessionContext, typeof Treelog.buildSessionContext>;

// ---- functions of pi's session-manager module its root does not export: pi's signatures ----

export declare function assertValidSessionId(id: string): void;
/** Project one entry into model-visible messages, applying its latest context edit if any. */
export declare function projectContextEntry(entry: SessionEntry, edit: ContextEditEntry | undefined): AgentMessage[];
export declare function getDefaultSessionDir(cwd: string, agentDir?: string): string;
export declare function loadEntriesFromFile(filePath: string): FileEntry[];
export declare function findMostRecentSession(sessionDir: string, cwd?: string): string | null;

// ---- treelog's search ----

export declare const search: typeof Treelog.search;
export declare const reindexSearch: typeof Treelog.reindexSearch;
export type SearchHit = Treelog.SearchHit;
export type SearchNotice = Treelog.SearchNotice;
export type SearchProgress = Treelog.SearchProgress;
export type SearchEvents = Treelog.SearchEvents;
export type SearchOptions = Treelog.SearchOptions;
export type SearchReindexed = Treelog.SearchReindexed;
